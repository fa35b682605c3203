//! The Prometheus metrics of a server: calls by tool and code with their latency,
//! refusals (authentication and the fences' denials), HTTP requests by route and status,
//! sessions and tasks. Served as text at `/metrics`.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    status: String,
}

type Histograms = Family<ToolLabel, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Histograms,
    in_flight: Gauge,
    denials: Family<ReasonLabel, Counter>,
    auth_refusals: Family<ReasonLabel, Counter>,
    requests: Family<RequestLabels, Counter>,
    sessions: Gauge,
    sessions_refused: Counter,
    tasks: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

fn latency_histogram() -> Histogram {
    // 100 µs to about 100 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 21))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("whalebox");
        let calls = Family::<CallLabels, Counter>::default();
        let latency: Histograms = Family::new_with_constructor(latency_histogram);
        let in_flight = Gauge::default();
        let denials = Family::<ReasonLabel, Counter>::default();
        let auth_refusals = Family::<ReasonLabel, Counter>::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let sessions = Gauge::default();
        let sessions_refused = Counter::default();
        let tasks = Gauge::default();
        registry.register(
            "tool_calls",
            "Tool calls by tool and result code",
            calls.clone(),
        );
        registry.register(
            "tool_call_seconds",
            "How long tool calls took",
            latency.clone(),
        );
        registry.register(
            "tool_calls_in_flight",
            "Tool calls under way",
            in_flight.clone(),
        );
        registry.register(
            "denials",
            "Calls the fences refused (path guard, exec policy, network), by code",
            denials.clone(),
        );
        registry.register(
            "auth_refusals",
            "Requests refused for want of a valid credential",
            auth_refusals.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests by route and status",
            requests.clone(),
        );
        registry.register("sessions", "MCP sessions open", sessions.clone());
        registry.register(
            "sessions_refused",
            "Sessions refused because max_sessions were open",
            sessions_refused.clone(),
        );
        registry.register("tasks", "Shell tasks running", tasks.clone());
        Metrics {
            registry,
            calls,
            latency,
            in_flight,
            denials,
            auth_refusals,
            requests,
            sessions,
            sessions_refused,
            tasks,
        }
    }

    /// A call began; it is counted as under way until the guard is dropped.
    pub fn call_started(self: &Arc<Self>) -> InFlight {
        self.in_flight.inc();
        InFlight(Arc::clone(self))
    }

    /// A call ended with `code` (`ok`, or the error's code).
    pub fn call_ended(&self, tool: &str, code: &str, took: Duration, denied: bool) {
        self.calls
            .get_or_create(&CallLabels {
                tool: tool.into(),
                code: code.into(),
            })
            .inc();
        self.latency
            .get_or_create(&ToolLabel { tool: tool.into() })
            .observe(took.as_secs_f64());
        if denied {
            self.denials
                .get_or_create(&ReasonLabel {
                    reason: code.into(),
                })
                .inc();
        }
    }

    pub fn calls_in_flight(&self) -> i64 {
        self.in_flight.get()
    }

    pub fn auth_refused(&self, reason: &str) {
        self.auth_refusals
            .get_or_create(&ReasonLabel {
                reason: reason.into(),
            })
            .inc();
    }

    pub fn request(&self, route: &str, status: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.into(),
                status: status.to_string(),
            })
            .inc();
    }

    pub fn session_opened(&self) {
        self.sessions.inc();
    }

    pub fn session_closed(&self) {
        self.sessions.dec();
    }

    pub fn session_refused(&self) {
        self.sessions_refused.inc();
    }

    pub fn set_tasks(&self, running: i64) {
        self.tasks.set(running);
    }

    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!("metrics: {e}");
        }
        out
    }
}

/// A call under way (see [`Metrics::call_started`]).
pub struct InFlight(Arc<Metrics>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_has_the_families() {
        let m = Arc::new(Metrics::new());
        {
            let _g = m.call_started();
            assert_eq!(m.calls_in_flight(), 1);
        }
        assert_eq!(m.calls_in_flight(), 0);
        m.call_ended("read_file", "ok", Duration::from_millis(2), false);
        m.call_ended("shell_run", "exec_denied", Duration::from_millis(2), true);
        m.auth_refused("missing");
        m.request("/mcp", 200);
        m.session_opened();
        let text = m.encode();
        for needle in [
            "whalebox_tool_calls_total{tool=\"read_file\",code=\"ok\"} 1",
            "whalebox_denials_total{reason=\"exec_denied\"} 1",
            "whalebox_auth_refusals_total{reason=\"missing\"} 1",
            "whalebox_http_requests_total{route=\"/mcp\",status=\"200\"} 1",
            "whalebox_sessions 1",
            "whalebox_tool_call_seconds_bucket",
        ] {
            assert!(text.contains(needle), "{needle} not in\n{text}");
        }
    }
}
