//! Errors as RFC 9457 problem details (`application/problem+json`): `type` (`about:blank`:
//! the status says what happened), `title`, `status`, `detail`, and for a bad request every
//! bad field in `errors` (a JSON pointer into the body, or a query parameter's name).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::domain::FieldError;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// One bad field of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FieldProblem {
    /// A JSON pointer into the request body, as a URI fragment (`#/amount_due`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// A query parameter's name (`limit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    pub detail: String,
}

impl FieldProblem {
    pub fn body(field: &str, detail: impl Into<String>) -> FieldProblem {
        FieldProblem {
            pointer: Some(format!("#/{field}")),
            parameter: None,
            detail: detail.into(),
        }
    }
    pub fn query(name: &str, detail: impl Into<String>) -> FieldProblem {
        FieldProblem {
            pointer: None,
            parameter: Some(name.to_string()),
            detail: detail.into(),
        }
    }
}

impl From<FieldError> for FieldProblem {
    fn from(e: FieldError) -> FieldProblem {
        FieldProblem::body(e.field, e.detail)
    }
}

/// A problem details document (RFC 9457).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// Always `about:blank`: the status code says what kind of problem it is.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Every bad field (422).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldProblem>,
    /// The fields in which the order registered under this ref differs (409).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicting_fields: Vec<String>,
}

impl Problem {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Problem {
        Problem {
            kind: "about:blank".into(),
            title: status.canonical_reason().unwrap_or("Error").into(),
            status: status.as_u16(),
            detail: detail.into(),
            errors: Vec::new(),
            conflicting_fields: Vec::new(),
        }
    }

    /// 422 naming every bad field.
    pub fn invalid(errors: Vec<FieldProblem>) -> Problem {
        let n = errors.len();
        Problem {
            errors,
            ..Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "{n} invalid field{}; nothing was written",
                    if n == 1 { "" } else { "s" }
                ),
            )
        }
    }

    pub fn unauthorized() -> Problem {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            "send the API token as Authorization: Bearer <token>",
        )
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut r = (status, body).into_response();
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        match status {
            StatusCode::UNAUTHORIZED => {
                r.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"payrecon\""),
                );
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            _ => {}
        }
        r
    }
}
