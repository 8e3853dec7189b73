// Package metrics is a small, hand-written implementation of Prometheus
// metrics and of their text exposition format, version 0.0.4 (what
// `GET /metrics` answers with Content-Type
// `text/plain; version=0.0.4; charset=utf-8`):
//
//	# HELP choir_rpc_requests_total Agent protocol requests that reached choird, by verb and outcome.
//	# TYPE choir_rpc_requests_total counter
//	choir_rpc_requests_total{code="ok",verb="HEARTBEAT"} 1027
//
// A Registry holds metric families: counters, gauges and histograms, each
// with a fixed list of label names, and families whose samples a function
// computes at scrape time (CounterFunc, GaugeFunc). Every method is safe
// for concurrent use. Names and label names are checked when a family is
// registered (a wrong one is a programming error and panics); label values
// are any string, escaped on output (`\` `"` and newline) and made valid
// UTF-8. A vector holds at most its limit of label sets (DefaultMaxSeries);
// further sets are counted in one series whose every label is "overflow",
// so no input can grow the registry without bound.
//
// The output is stable: families sorted by name, each with one HELP and
// one TYPE line, series sorted by their label values, histogram buckets
// cumulative and ending with le="+Inf", followed by _sum and _count.
//
// Default is the registry choird serves; choird's own families are declared
// in families.go, in one list, so their names are reviewed in one place.
// The package imports only the standard library.
package metrics
