//! Unread chunked bodies close the connection instead of being drained.
//!
//! When a route answers without reading a body, actix closes the connection if the body has a
//! `Content-Length`, but reads and discards a chunked body to its end, which a client can make
//! endless. Holding the request's payload until the response has been sent makes actix see it
//! unread and close the connection after the response, as it does for the other kind.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest};
use actix_web::error::PayloadError;
use actix_web::http::header;
use actix_web::web::Bytes;
use futures_util::{Stream, StreamExt};

/// The request's payload, shared by the route (which reads it) and the response (which holds it).
#[derive(Clone)]
pub(super) struct HeldPayload(Rc<RefCell<Payload>>);

impl HeldPayload {
    /// Puts a chunked request's payload behind a shared handle; other requests are left alone.
    pub(super) fn hold(req: &mut ServiceRequest) -> Option<Self> {
        let chunked = req
            .headers()
            .get(header::TRANSFER_ENCODING)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.to_ascii_lowercase().contains("chunked"));
        if !chunked {
            return None;
        }
        let (_, payload) = req.parts_mut();
        let held = Self(Rc::new(RefCell::new(std::mem::replace(payload, Payload::None))));
        *payload = Payload::Stream { payload: Box::pin(held.clone()) };
        Some(held)
    }

    /// `body`, holding the payload until it has been sent.
    pub(super) fn into_body(self, body: BoxBody) -> BoxBody {
        BoxBody::new(Holding { body, _payload: self })
    }
}

impl Stream for HeldPayload {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.0.try_borrow_mut() {
            Ok(mut payload) => payload.poll_next_unpin(cx),
            Err(_) => Poll::Ready(None),
        }
    }
}

struct Holding {
    body: BoxBody,
    _payload: HeldPayload,
}

impl MessageBody for Holding {
    type Error = <BoxBody as MessageBody>::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}
