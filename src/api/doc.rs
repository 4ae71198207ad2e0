//! The OpenAPI 3.1 document of the API, derived from the handlers' `#[utoipa::path]`
//! annotations and the bodies' types. `docs/openapi.json` is this document as committed; a
//! test compares the two (bless with `PAYRECON_BLESS=1`) and validates it with
//! `openapi-spec-validator`.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "payrecon expected payments API",
        description = "Register the payments a shop expects; payrecon reconciles them against the chain and tells the shop by events (Standard Webhooks). See docs/api.md.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(super::create_order, super::get_order, super::list_orders, super::openapi),
    components(schemas(
        super::request::OrderRequest,
        super::OrderDetail,
        super::OrderList,
        super::problem::Problem,
        super::problem::FieldProblem,
    )),
    modifiers(&Bearer),
    tags(
        (name = "orders", description = "Expected payments"),
        (name = "meta", description = "This document"),
    )
)]
struct Doc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(c) = openapi.components.as_mut() {
            c.add_security_scheme(
                "bearer",
                SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
            );
        }
    }
}

/// The document, pretty-printed, with a trailing newline (the committed file's form).
pub fn json() -> String {
    let mut doc = Doc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    let mut s = doc.to_pretty_json().unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}
