//! The interactive API explorer: Swagger UI over `/openapi.json`, every file served from the
//! binary (the `utoipa-swagger-ui` crate's `vendored` feature embeds Swagger UI's release at
//! build time; nothing is fetched at build or run time). `/docs` stays the page that needs no
//! script.

use std::sync::{Arc, OnceLock};

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use utoipa_swagger_ui::Config;

use crate::ApiError;
use crate::router::Routes;

/// Only this origin, for every kind of resource: scripts and styles are Swagger UI's files, its
/// requests go to this API, its icons are `data:` images in its stylesheet. No inline script.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                      connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; \
                      frame-ancestors 'none'";

/// The page: Swagger UI's own `index.html` with absolute paths, so that it works at a path
/// without a trailing slash.
const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>API explorer</title>
<link rel="stylesheet" href="/explorer/swagger-ui.css">
<link rel="stylesheet" href="/explorer/index.css">
<link rel="icon" type="image/png" href="/explorer/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/explorer/swagger-ui-bundle.js"></script>
<script src="/explorer/swagger-ui-standalone-preset.js"></script>
<script src="/explorer/swagger-initializer.js"></script>
</body>
</html>
"#;

pub fn configure(routes: &mut Routes) {
    routes.add(explorer, __path_explorer).page();
    routes.add(explorer_file, __path_explorer_file);
}

/// Swagger UI's settings, written into its `swagger-initializer.js`: this service's document,
/// "Try it out" open, no call to Swagger's online validator, and the key pasted under "Authorize"
/// kept in the page only: persisted, it would sit in this origin's `localStorage`, where any
/// script that ever runs on the origin reads it.
fn config() -> Arc<Config<'static>> {
    static CONFIG: OnceLock<Arc<Config<'static>>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            Arc::new(
                Config::new(["/openapi.json"])
                    .try_it_out_enabled(true)
                    .persist_authorization(false)
                    .validator_url("none")
                    .deep_linking(true),
            )
        })
        .clone()
}

fn secured(mut response: actix_web::HttpResponseBuilder) -> actix_web::HttpResponseBuilder {
    response
        .insert_header((header::CONTENT_SECURITY_POLICY, POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"));
    response
}

/// The interactive explorer: paste an API key under "Authorize" and send real requests.
#[utoipa::path(
    get, path = "/explorer", operation_id = "explorer", tag = "documentation", security(()),
    responses((status = 200, description = "Swagger UI over this document; its files come from this service.", content_type = "text/html", body = String)),
)]
async fn explorer() -> HttpResponse {
    secured(HttpResponse::Ok()).content_type("text/html; charset=utf-8").body(PAGE)
}

/// One of the explorer's files (Swagger UI's scripts, stylesheets and icons).
#[utoipa::path(
    get, path = "/explorer/{file}", operation_id = "explorerFile", tag = "documentation", security(()),
    params(("file" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "A file name, such as `swagger-ui-bundle.js`; another is a 404.")),
    responses((status = 200, description = "The file.", content(
        (String = "text/javascript"),
        (String = "text/css"),
        (String = "text/html"),
        (String = "image/png"),
    ))),
)]
async fn explorer_file(file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let name = file.into_inner();
    let Some(content_type) = content_type(&name) else {
        return Err(ApiError::not_found("file"));
    };
    match utoipa_swagger_ui::serve(&name, config()) {
        Ok(Some(found)) => Ok(secured(HttpResponse::Ok())
            .content_type(content_type)
            .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
            .body(found.bytes.into_owned())),
        Ok(None) => Err(ApiError::not_found("file")),
        Err(error) => Err(compliance_app::AppError::Internal(format!("the explorer's {name}: {error}")).into()),
    }
}

/// The media types of the files Swagger UI's release holds; any other name is not one of them.
fn content_type(name: &str) -> Option<&'static str> {
    let extension = name.rsplit_once('.')?.1;
    Some(match extension {
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "html" => "text/html; charset=utf-8",
        "png" => "image/png",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_initializer_points_at_this_document_and_every_page_file_is_embedded() {
        let initializer = utoipa_swagger_ui::serve("swagger-initializer.js", config()).unwrap().unwrap();
        let text = String::from_utf8(initializer.bytes.into_owned()).unwrap();
        assert!(text.contains("\"/openapi.json\""), "{text}");
        assert!(!text.contains("petstore"), "{text}");
        for path in PAGE.split('"').filter(|part| part.starts_with("/explorer/")) {
            let name = path.trim_start_matches("/explorer/");
            assert!(content_type(name).is_some(), "{name}");
            assert!(utoipa_swagger_ui::serve(name, config()).unwrap().is_some(), "{name} is not embedded");
        }
        assert!(utoipa_swagger_ui::serve("nothing.js", config()).unwrap().is_none());
    }
}
