//! Reading the JSON documents the server and the load generator write.

use serde_json::Value;

/// A number from a JSON document by path (`"latency_us.p99"`), 0 when absent.
pub fn num(v: &Value, path: &str) -> f64 {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}
