/**
 * Prometheus metrics of a running server, served as {@code GET /metrics} by the control
 * endpoint in the text exposition format (docs/metrics.md lists every metric).
 *
 * <h2>1. Read at scrape time, never counted twice</h2>
 * Nothing here is on the IO path. {@link io.iotarget.control.metrics.ServerMetrics} is one
 * custom collector that, when Prometheus scrapes, reads the counters the server already keeps
 * — the striped io.stat counters (flushed exactly as an io.stat read flushes them), the
 * policies' io.stat fields, each pair's latency histogram and held time (folded as an
 * iotarget.io.stat read folds them), the buffer pool's and the front ends' counters — and turns them
 * into the Prometheus client's snapshots; the client's writer does the formatting.
 *
 * <h2>2. Equal to io.stat</h2>
 * A scrape takes the group tree's lock and then the io.stat flusher's, in the order an io.stat
 * read takes them, so {@code iotarget_io_ops_total} and {@code iotarget_io_bytes_total} are
 * what io.stat would have printed at that moment, to the request.
 *
 * <h2>3. Watch</h2> A scrape's cost grows with groups × devices (one flush, one line each), as
 * reading every io.stat would; it holds the tree lock meanwhile, so configuration changes wait
 * for it, IO does not.
 */
package io.iotarget.control.metrics;
