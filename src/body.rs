//! Reading a request body within a limit, for every route that takes one (webhooks, the API).

use axum::body::Body;
use axum::http::{header, HeaderMap};
use futures::StreamExt as _;

/// Why a request body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Over the limit (announced by `Content-Length`, or counted): answer 413.
    TooLarge,
    /// The client broke off before the end.
    Broken,
}

/// After a 413, at most this much of the rest of the body is read and dropped, so that the
/// client gets the answer instead of a connection reset.
const DRAIN_LIMIT: usize = 1024 * 1024;

/// The whole body, at most `max` bytes: a larger one is refused without being read whole
/// (by its `Content-Length` before any byte, else as soon as the count passes `max`).
pub async fn read_limited(
    headers: &HeaderMap,
    body: Body,
    max: usize,
) -> Result<Vec<u8>, BodyError> {
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let mut stream = body.into_data_stream();
    if announced.is_some_and(|n| n > max as u64) {
        if announced.is_some_and(|n| n <= DRAIN_LIMIT as u64) {
            drain(stream).await;
        }
        return Err(BodyError::TooLarge);
    }
    let mut raw = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| BodyError::Broken)?;
        if raw.len() + chunk.len() > max {
            drain(stream).await;
            return Err(BodyError::TooLarge);
        }
        raw.extend_from_slice(&chunk);
    }
    Ok(raw)
}

/// Reads and drops up to `DRAIN_LIMIT` more bytes (within the caller's timeout).
async fn drain(mut stream: axum::body::BodyDataStream) {
    let mut seen = 0usize;
    while let Some(Ok(chunk)) = stream.next().await {
        seen += chunk.len();
        if seen > DRAIN_LIMIT {
            break;
        }
    }
}
