/**
 * calibrate: a device's io.cost.model measured, not guessed, as the kernel's
 * {@code tools/cgroup/iocost_coef_gen.py} measures a disk.
 *
 * <h2>The problem</h2>
 * iocost charges each IO the device time its linear model predicts (io.cost.model: rbps,
 * rseqiops, rrandiops and the same for writes). Coefficients that are off make every charge off
 * by the same factor: the QoS loop then walks vrate towards the truth, slowly (1% steps after
 * three periods) and only when latency targets or queue waits tell it the device is saturated.
 * The kernel leaves the numbers to a separate script; here the server measures its own devices.
 *
 * <h2>1. Runs</h2>
 * Six runs in the script's order, each {@code seconds} long (default 3), the first fifth not
 * counted (warm-up): sequential 1 MiB reads (rbps, bytes/s), sequential and random 4 KiB reads
 * (rseqiops, rrandiops), then the same as writes. Each saturates the device at its
 * {@code queue_depth}, which the dispatch queue never exceeds: a 4 KiB run keeps twice that
 * outstanding (at most 1,024 more), so that the extra requests start the moment a slot frees, on
 * the completing thread, and the device never waits for the calibration's own thread; a 1 MiB
 * run runs at {@code queue_depth} (at most 16), with as many more waiting. Sequential runs walk the device from offset 0, wrapping at its end; random
 * ones pick a uniformly random aligned block. The requests go straight to the device's dispatch
 * queue ({@code Engine.submitUncharged}): no group is charged, no policy holds them.
 *
 * <h2>2. Writes keep the data</h2>
 * A write run reads a block and writes the same bytes back, so nothing changes on the device.
 * Over the run's counted window T it completes R reads and W writes; with the read run's rate
 * r, the reads took R / r of the device's time and the writes the rest:
 * {@code w = W / (T − R / r)} — the linear model's own additivity. When that leaves the writes
 * under 5% of T the device ran faster than in the read run (a memory backend, a cache): reads
 * and writes are then counted alike, {@code w = (R + W) / T}, and the progress says so.
 *
 * <h2>3. Worked example</h2>
 * A null backend with {@code completion_nsec=1000000 queue_depth=10 mbps=200}: 10 requests of
 * 1 ms at once, 10,000 IOPS; 200 MiB/s. Random 4 KiB reads, 3 s: 2.4 s counted, 24,000 reads,
 * rrandiops = 10,000, each taking 1 ms (the p99, rlat, is 1 ms plus the timer's lateness: 1,814 µs
 * measured under load 11 on 2 cores, bench/results/calibrate.md). Random 4 KiB writes: each slot alternates a 1 ms read and a 1 ms write, so 12,000
 * reads and 12,000 writes in 2.4 s; the reads took 12,000 / 10,000 = 1.2 s, and
 * wrandiops = 12,000 / (2.4 − 1.2) = 10,000. The 1 MiB runs: 5 ms of bandwidth each, 200 a
 * second, rbps = 209,715,200 (200 MiB/s); a write run moves 1 MiB read and 1 MiB written per
 * slot turn, 240 of each in 2.4 s; the reads took 240 MiB / 200 MiB/s = 1.2 s, so
 * wbps = 240 MiB / 1.2 s = 200 MiB/s.
 *
 * <h2>4. The suggested io.cost.qos</h2>
 * {@code enable=1 ctrl=user rpct=95 rlat=P99(random reads) wpct=95 wlat=P99(random writes)}, in
 * µs, latencies from the device's start of a request to its completion, saturated: at its own depth the device
 * misses them for about 1% of requests, well under the 5% iocost allows; when tenants queue
 * more than it takes, every request also waits for a slot and the misses pass 5% — the busy
 * signal that lowers vrate. min and max are left as they are.
 *
 * <h2>5. In use</h2>
 * A device a tenant submitted IO to within the last 10 s is in use: refused (EBUSY); tenant IO
 * arriving during the runs stops them (EBUSY); {@code force=1} overrides both. One calibration
 * per device at a time.
 *
 * <h2>6. Watch</h2>
 * The progress lines (a line a second per run); {@code iotarget_dispatch_uncharged_total} and
 * {@code iotarget_dispatch_in_flight} of the device, busy while no group's IO moves; afterwards,
 * io.stat's {@code cost.vrate} on the device near 100% while tenants saturate it
 * (bench/results/calibrate.md).
 *
 * <p>Threads: {@link io.iotarget.control.calibrate.Calibration#run} runs on the control request's
 * thread and issues every request itself; completions only hand the request back through a
 * queue, so a backend that completes on the submitting thread never recurses.
 */
package io.iotarget.control.calibrate;
