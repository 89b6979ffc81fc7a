//! `GET <list>/export?format=csv|json`: every row of a list, streamed as CSV (RFC 4180) or JSON
//! Lines, read in keyset batches so that the server holds one batch at a time whatever the count.
//!
//! A handler reads its first batch before it answers, so that a refused permission or a bad
//! parameter is a status code; it then streams the rows batch after batch, each batch asked for
//! only when the client has taken the previous one (actix pulls the body as the socket drains).
//! An error after the first batch can no longer change the status: the response ends without its
//! final chunk, which a client sees as a truncated transfer, never as a complete file.

use actix_web::http::header::{ContentDisposition, DispositionParam, DispositionType};
use actix_web::web::Bytes;
use std::rc::Rc;
use std::sync::Arc;

use actix_web::{HttpResponse, ResponseError, web};
use compliance_app::{App, AppError};
use compliance_ports::{Cursor, Page};
use futures_util::stream;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::list_query::ListParams;
use crate::{ApiError, AppState};

/// Rows read per batch: large enough that the per-statement cost is spread thin, small enough
/// that a batch of the widest rows stays well under a MiB.
pub const BATCH_ROWS: usize = 500;

/// The file an export is: CSV with a header row, or one JSON object per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Json,
}

/// `format` of an export, read as text so that a bad value is a 400 naming it.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code, reason = "read by ExportFormat::take; this struct documents it")]
pub struct FormatQuery {
    /// `csv` (the default): RFC 4180 with a header row; `json`: JSON Lines, one object per row.
    #[param(value_type = Option<String>, pattern = "^(csv|json)$")]
    pub format: Option<String>,
}

impl ExportFormat {
    /// Takes `format` from an export's parameters (the rest are its list's: filters, `q`, `sort`)
    /// and refuses `limit` and `cursor`: an export holds every matching row.
    pub fn take(params: &mut ListParams) -> Result<Self, ApiError> {
        let format = Self::parse(params.single("format")?.as_deref())?;
        for name in ["limit", "cursor"] {
            if !params.take(name).is_empty() {
                return Err(ApiError::invalid_field(
                    name,
                    "is not a parameter of an export, which holds every matching row",
                ));
            }
        }
        Ok(format)
    }

    /// The format `text` names; CSV without one.
    pub fn parse(text: Option<&str>) -> Result<Self, ApiError> {
        match text {
            None | Some("csv") => Ok(Self::Csv),
            Some("json") => Ok(Self::Json),
            Some(_) => Err(ApiError::invalid_field("format", "must be `csv` or `json`")),
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8; header=present",
            Self::Json => "application/x-ndjson; charset=utf-8",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Json => "jsonl",
        }
    }
}

/// What an export writes: its file name, its columns (the wire fields, in this order), and how
/// one record shows on the wire (its DTO, as a JSON value).
pub struct Export<T> {
    pub format: ExportFormat,
    /// The file name without extension, e.g. `risks`.
    pub name: &'static str,
    pub columns: &'static [&'static str],
    pub row: fn(&T) -> serde_json::Result<Value>,
}

/// Answers an export of a list: `load(app, after)` loads the batch after the row `after` names
/// (the first batch with `None`) through the list's own use case, so the export needs what
/// reading the list needs and sees what it sees.
pub async fn stream_list<T, F, Fut>(
    state: web::Data<AppState>,
    export: Export<T>,
    load: F,
) -> Result<HttpResponse, ApiError>
where
    T: Send + 'static,
    F: Fn(Arc<App>, Option<Cursor>) -> Fut + 'static,
    Fut: Future<Output = Result<Page<T>, AppError>> + Send + 'static,
{
    let first = state.run(|app| load(app, None)).await?;
    let load = Rc::new(load);
    Ok(respond(export, first, move |after| {
        let (state, load) = (state.clone(), Rc::clone(&load));
        async move { state.run(|app| load(app, Some(after))).await }
    }))
}

/// Streams every row of a list: `first` is the first batch, already loaded; `load(after)` loads
/// the batch after the row `after` names (the previous batch's `next`).
pub fn respond<T, L, Fut>(export: Export<T>, first: Page<T>, load: L) -> HttpResponse
where
    T: 'static,
    L: FnMut(Cursor) -> Fut + 'static,
    Fut: Future<Output = Result<Page<T>, ApiError>> + 'static,
{
    let Export { format, name, columns, row } = export;
    let header = match format {
        ExportFormat::Csv => csv_line(columns.iter().copied()),
        ExportFormat::Json => Ok(Vec::new()),
    };
    let state = Batches { next: Some(Ok(first)), load, header: Some(header) };
    let body = stream::unfold(state, move |mut state| async move {
        let mut out = match state.header.take() {
            Some(header) => match header {
                Ok(bytes) => bytes,
                Err(error) => return Some((Err(ExportError(error)), state.stopped())),
            },
            None => Vec::new(),
        };
        let page = match state.next.take()? {
            Ok(page) => page,
            Err(error) => return Some((Err(ExportError(error)), state.stopped())),
        };
        if let Err(error) = write_rows(&mut out, format, columns, page.items.iter().map(row)) {
            return Some((Err(ExportError(error)), state.stopped()));
        }
        if let Some(after) = page.next {
            state.next = Some((state.load)(after).await);
        }
        Some((Ok(Bytes::from(out)), state))
    });
    let file = format!("{name}.{}", format.extension());
    HttpResponse::Ok()
        .content_type(format.content_type())
        .insert_header(ContentDisposition {
            disposition: DispositionType::Attachment,
            parameters: vec![DispositionParam::Filename(file)],
        })
        .streaming(body)
}

/// Where the stream stands: the batch to write next (loaded, or the error loading it) and the
/// header row until it is written.
struct Batches<T, L> {
    next: Option<Result<Page<T>, ApiError>>,
    load: L,
    header: Option<Result<Vec<u8>, ApiError>>,
}

impl<T, L> Batches<T, L> {
    /// After an error, nothing more is written.
    fn stopped(mut self) -> Self {
        self.next = None;
        self
    }
}

/// The error that cuts an export short after its status was sent (logged where it arose, as
/// every [`AppError`] is).
#[derive(Debug)]
pub struct ExportError(ApiError);

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "export stopped: {}", self.0.status_code())
    }
}

impl std::error::Error for ExportError {}

/// Appends each row to `out` as a CSV record of `columns`, or as a JSON line with the row's
/// fields in the order of `columns`.
fn write_rows(
    out: &mut Vec<u8>,
    format: ExportFormat,
    columns: &[&str],
    rows: impl Iterator<Item = serde_json::Result<Value>>,
) -> Result<(), ApiError> {
    let objects = rows.map(|row| match row.map_err(internal)? {
        Value::Object(fields) => Ok(fields),
        _ => Err(internal("an exported row is not a JSON object")),
    });
    match format {
        ExportFormat::Json => {
            for fields in objects {
                json_line(out, columns, &fields?).map_err(internal)?;
            }
        }
        ExportFormat::Csv => {
            let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).from_writer(out);
            for fields in objects {
                let fields = fields?;
                writer.write_record(columns.iter().map(|column| cell(fields.get(*column)))).map_err(internal)?;
            }
            writer.flush().map_err(internal)?;
        }
    }
    Ok(())
}

/// One JSON object on one line: the fields of `columns` the row has, in that order.
fn json_line(out: &mut Vec<u8>, columns: &[&str], fields: &Map<String, Value>) -> serde_json::Result<()> {
    out.push(b'{');
    let present = columns.iter().filter_map(|column| Some((*column, fields.get(*column)?)));
    for (index, (column, value)) in present.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, column)?;
        out.push(b':');
        serde_json::to_writer(&mut *out, value)?;
    }
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// A whole CSV table: the `header` row, then `rows`, each cell neutralised as an export's are.
pub(crate) fn csv_table<R: AsRef<[String]>>(header: &[&str], rows: &[R]) -> Result<Vec<u8>, ApiError> {
    let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).from_writer(Vec::new());
    writer.write_record(header.iter().map(|cell| neutralised(cell))).map_err(internal)?;
    for row in rows {
        writer.write_record(row.as_ref().iter().map(|cell| neutralised(cell))).map_err(internal)?;
    }
    writer.into_inner().map_err(|error| internal(error.error()))
}

/// One CSV record of `cells`, for the header row.
fn csv_line<'a>(cells: impl Iterator<Item = &'a str>) -> Result<Vec<u8>, ApiError> {
    let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).from_writer(Vec::new());
    writer.write_record(cells.map(neutralised)).map_err(internal)?;
    writer.into_inner().map_err(|error| internal(error.error()))
}

/// A wire value as a CSV cell: text as it is, `null` or absent as an empty cell, numbers and
/// booleans as JSON writes them, arrays and objects as their JSON text.
fn cell(value: Option<&Value>) -> String {
    let text = match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    neutralised(&text)
}

/// `text`, with a `'` before it when a spreadsheet would read it as a formula: a cell starting
/// with `=`, `+`, `-`, `@`, a tab or a carriage return (OWASP's "CSV injection" list).
fn neutralised(text: &str) -> String {
    match text.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') => format!("'{text}"),
        _ => text.to_owned(),
    }
}

/// An export that cannot be written is a bug: logged, answered as an internal error.
fn internal(error: impl std::fmt::Display) -> ApiError {
    ApiError::from(AppError::Internal(format!("export: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_prefixed_and_others_kept() {
        for (text, expected) in [
            ("=1+2", "'=1+2"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("a=b", "a=b"),
            ("", ""),
            ("Ünïcode", "Ünïcode"),
        ] {
            assert_eq!(neutralised(text), expected, "{text:?}");
        }
    }

    #[test]
    fn values_become_cells() {
        assert_eq!(cell(None), "");
        assert_eq!(cell(Some(&Value::Null)), "");
        assert_eq!(cell(Some(&serde_json::json!(true))), "true");
        assert_eq!(cell(Some(&serde_json::json!(-3))), "'-3");
        assert_eq!(cell(Some(&serde_json::json!(["a", "b"]))), r#"["a","b"]"#);
        assert_eq!(cell(Some(&serde_json::json!("a,\"b\"\nc"))), "a,\"b\"\nc");
    }

    #[test]
    fn rows_are_quoted_per_rfc_4180() {
        let mut out = Vec::new();
        let rows = [serde_json::json!({"a": "x,\"y\"\nz", "b": "=cmd"})];
        write_rows(&mut out, ExportFormat::Csv, &["a", "b", "c"], rows.into_iter().map(Ok)).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "\"x,\"\"y\"\"\nz\",'=cmd,\r\n");
    }

    #[test]
    fn json_lines_keep_the_column_order_and_leave_absent_fields_out() {
        let mut out = Vec::new();
        let rows = [serde_json::json!({"a": "=x\n", "b": null, "z": 1}), serde_json::json!({"b": [1]})];
        write_rows(&mut out, ExportFormat::Json, &["z", "b", "a", "c"], rows.into_iter().map(Ok)).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "{\"z\":1,\"b\":null,\"a\":\"=x\\n\"}\n{\"b\":[1]}\n");
    }

    #[test]
    fn a_bad_format_names_the_parameter() {
        assert_eq!(ExportFormat::parse(None).unwrap(), ExportFormat::Csv);
        assert_eq!(ExportFormat::parse(Some("json")).unwrap(), ExportFormat::Json);
        let error = ExportFormat::parse(Some("xlsx")).unwrap_err();
        assert!(format!("{error:?}").contains("format"), "{error:?}");
    }
}
