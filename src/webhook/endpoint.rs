//! A provider's webhook settings (config) turned into the route's `Endpoint`.

use super::{Encoding, Endpoint, Scheme, Signed, DEFAULT_TOLERANCE};
use crate::config::WebhookSettings;

/// `event_id` is the provider's own event-id pointer (generic providers), used by the
/// `http` scheme when `[providers.<name>.webhook] event_id` is not set.
pub fn endpoint(provider: &str, w: &WebhookSettings, event_id: Option<&str>) -> Endpoint {
    let scheme = match w.scheme.as_str() {
        "qvard" => Scheme::Qvard,
        "paymos" => Scheme::Paymos,
        "chaingateway" => Scheme::Chaingateway,
        _ => Scheme::Http {
            header: w.header.clone().unwrap_or_default(),
            encoding: if w.encoding == "base64" {
                Encoding::Base64
            } else {
                Encoding::Hex
            },
            signed: if w.signed == "body" {
                Signed::Body
            } else {
                Signed::Pointer(w.signed.clone())
            },
            event_id: w
                .event_id
                .clone()
                .or_else(|| event_id.map(String::from))
                .unwrap_or_else(|| "/id".into()),
            timestamp_header: w.timestamp_header.clone(),
            tolerance: w
                .timestamp_header
                .as_ref()
                .map(|_| w.tolerance.unwrap_or(DEFAULT_TOLERANCE)),
        },
    };
    Endpoint {
        provider: provider.to_string(),
        secret: w.secret.clone(),
        scheme,
    }
}
