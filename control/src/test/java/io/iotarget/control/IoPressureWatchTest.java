package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlToken;
import io.iotarget.iocontrol.pressure.Pressure;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * io.pressure over a real server and NBD, on the real clock: tenant a, one connection at QD32
 * held by {@code riops=1000}, is stalled all the time; tenant b, unthrottled at QD1, never.
 * {@code iotarget watch} on a returns within the trigger's window; a watch on b never fires,
 * and once its client hangs up the server holds no trigger; bad triggers get the kernel's
 * EINVAL; the metrics carry the totals. A watch whose group is removed ends with ENODEV, as
 * the kernel's poll does with POLLERR.
 */
class IoPressureWatchTest {
    private static final int QD = 32;
    private static final long HOLD_MS = 12_000;
    @TempDir
    Path dir;

    private record Cli(int code, String out, String err) {
    }

    private Cli cli(Server server, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] full = new String[args.length + 2];
        full[0] = "--control";
        full[1] = "127.0.0.1:" + server.controlAddress().getPort();
        System.arraycopy(args, 0, full, 2, args.length);
        int code = Main.run(full, Map.of(ControlToken.DIRECTORY_ENV, dir.toString()), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Cli(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static String field(String text, String line, String key) {
        Matcher m = Pattern.compile("(?m)^" + line + " .*\\b" + key + "=(\\S+)").matcher(text);
        assertTrue(m.find(), key + " in " + text);
        return m.group(1);
    }

    /** Keeps {@code depth} 4 KiB reads outstanding on the connection until {@code stop}. */
    private static Thread load(SocketChannel c, int depth, AtomicBoolean stop, AtomicLong done) {
        return Thread.ofPlatform().daemon().start(() -> {
            try {
                long cookie = 0;
                for (int i = 0; i < depth; i++) RawClients.writeFully(c, RawClients.nbdRequest(RawClients.NBD_CMD_READ, cookie++, 0, 4096));
                for (int outstanding = depth; outstanding > 0; outstanding--) {
                    ByteBuffer reply = RawClients.readFully(c, 16);
                    if (reply.getInt(4) != 0) throw new IllegalStateException("NBD error " + reply.getInt(4));
                    RawClients.readFully(c, 4096);
                    done.incrementAndGet();
                    if (!stop.get()) {
                        RawClients.writeFully(c, RawClients.nbdRequest(RawClients.NBD_CMD_READ, cookie++, 0, 4096));
                        outstanding++;
                    }
                }
            } catch (Exception e) {
                if (!stop.get()) throw new IllegalStateException(e);
            }
        });
    }

    @Test
    void aHeldTenantIsUnderFullPressureAndItsTriggerFiresWhileTheSiblingsNever() throws Exception {
        String config = """
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "backends": { "m": { "type": "memory", "size": "64M", "enable": 1 } },
                  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { "io.max": "m riops=1000" }, "b": {} } },
                  "nbd": { "exports": { "a": { "backend": "m", "cgroup": "tenants/a", "enable": 1 },
                                        "b": { "backend": "m", "cgroup": "tenants/b", "enable": 1 } } } }
                """;
        try (Server server = Server.start(new ObjectMapper().readTree(config), dir)) {
            Pressure pressure = server.engine().controller().tree().pressure();
            int nbdPort = server.nbdAddresses().getFirst().getPort();
            int baseline = pressure.triggerCount();

            // Refused triggers: the kernel's EINVAL, and nothing changes.
            String before = server.mounts().read("tenants/a/io.pressure");
            for (String bad : new String[]{"some 0 1000000", "some 150000 499999", "full 150000 10000001", "some 2000000 1000000",
                                           "all 1 1000000", "some 150000", " some 150000 1000000", "some -1 1000000", "some 4294967297 1000000"}) {
                Cli w = cli(server, "write", "tenants/a/io.pressure", bad);
                assertEquals(1, w.code(), bad + ": " + w);
                assertTrue(w.err().contains("EINVAL"), bad + ": " + w.err());
                Cli watch = cli(server, "watch", "tenants/a/io.pressure", bad);
                assertEquals(1, watch.code(), bad + ": " + watch);
                assertTrue(watch.err().contains("EINVAL"), bad + ": " + watch.err());
            }
            assertEquals(0, cli(server, "write", "tenants/a/io.pressure", "full 500000 10000000 and the rest is not read").code(),
                    "the kernel's sscanf stops after the second number");
            assertEquals(before, server.mounts().read("tenants/a/io.pressure"));
            assertEquals(baseline, pressure.triggerCount(), "no trigger outlives its write");

            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong doneA = new AtomicLong();
            AtomicLong doneB = new AtomicLong();
            try (SocketChannel a = RawClients.nbdTransmitting(nbdPort, "a", 0);
                 SocketChannel b = RawClients.nbdTransmitting(nbdPort, "b", 0)) {
                long startNs = System.nanoTime();
                Thread loadA = load(a, QD, stop, doneA);
                Thread loadB = load(b, 1, stop, doneB);

                // The sibling's watch: a raw stream, read for 3 s, then hung up on.
                int fired;
                long firedMs;
                try (Socket raw = new Socket("127.0.0.1", server.controlAddress().getPort())) {
                    String token = ControlToken.read(ControlToken.file(dir, server.controlAddress()));
                    byte[] body = "some 150000 1000000".getBytes(StandardCharsets.UTF_8);
                    OutputStream out = raw.getOutputStream();
                    out.write(("POST /v1/watch?path=tenants/b/io.pressure HTTP/1.1\r\nHost: 127.0.0.1:" + server.controlAddress().getPort()
                               + "\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/octet-stream\r\nContent-Length: "
                               + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    out.write(body);
                    out.flush();
                    raw.setSoTimeout(200);
                    BufferedReader in = new BufferedReader(new InputStreamReader(raw.getInputStream(), StandardCharsets.UTF_8));
                    assertTrue(in.readLine().startsWith("HTTP/1.1 200"));

                    // Meanwhile the held tenant's watch, through the CLI: it fires within its window.
                    long watchStart = System.nanoTime();
                    Cli watch = cli(server, "watch", "tenants/a/io.pressure", "some 150000 1000000");
                    firedMs = (System.nanoTime() - watchStart) / 1_000_000;
                    assertEquals(0, watch.code(), watch.toString());
                    assertEquals("tenants/a/io.pressure some 150000 1000000 fired\n", watch.out());
                    // 150 ms of stall in a 1 s window, polled every 100 ms: ~250-350 ms; the bound is the window and two polls.
                    assertTrue(firedMs <= 1200, "fired after " + firedMs + " ms");

                    fired = 0;
                    long until = System.nanoTime() + 3_000_000_000L;
                    while (System.nanoTime() < until) {
                        try {
                            String line = in.readLine();
                            if (line != null && line.startsWith("event: fired")) fired++;
                        } catch (SocketTimeoutException quiet) {
                            // between heartbeats
                        }
                    }
                    assertEquals(baseline + 1, pressure.triggerCount(), "b's trigger is watched");
                }
                assertEquals(0, fired, "the unthrottled sibling's trigger never fired");
                Await.until(Duration.ofSeconds(5), () -> pressure.triggerCount() == baseline,
                        () -> "the client hung up: its trigger is gone: " + pressure.triggerCount() + " triggers, " + baseline + " before");

                Thread.sleep(Math.max(0, HOLD_MS - (System.nanoTime() - startNs) / 1_000_000));
                String pa = server.mounts().read("tenants/a/io.pressure");
                long heldUs = (System.nanoTime() - startNs) / 1000;
                String pb = server.mounts().read("tenants/b/io.pressure");
                String token = ControlToken.read(ControlToken.file(dir, server.controlAddress()));
                String metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + server.controlAddress().getPort() + "/metrics"))
                        .header("Authorization", "Bearer " + token).build(), HttpResponse.BodyHandlers.ofString()).body();
                stop.set(true);
                loadA.join(5000);
                loadB.join(5000);

                double iops = doneA.get() / (heldUs / 1e6);
                System.out.printf("io.pressure over NBD: a (riops=1000, QD32) %.0f IOPS, held %d us:%n%sb (QD1, free) %d IOs:%n%s"
                                  + "watch on a fired after %d ms%n", iops, heldUs, pa, doneB.get(), pb, firedMs);
                assertTrue(iops < 1100, "a was held: " + iops + " IOPS");
                assertTrue(doneB.get() > 10 * doneA.get(), "b ran free: " + doneB.get() + " against " + doneA.get());
                long someUs = Long.parseLong(field(pa, "some", "total"));
                long fullUs = Long.parseLong(field(pa, "full", "total"));
                assertTrue(Math.abs(someUs - heldUs) <= heldUs / 20, "some total " + someUs + " us, held " + heldUs + " us\n" + pa);
                assertTrue(Math.abs(fullUs - heldUs) <= heldUs / 20, "full total " + fullUs + " us, held " + heldUs + " us\n" + pa);
                // ~6 periods of 100 % give 100 * (1 - (1677/2048)^6) = 69.9; a missed poll or two can only shift a period.
                double avg10 = Double.parseDouble(field(pa, "some", "avg10"));
                assertTrue(avg10 >= 60 && avg10 <= 75, pa);
                assertEquals(field(pa, "some", "avg10"), field(pa, "full", "avg10"), pa);
                assertEquals("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", pb);
                Matcher waiting = Pattern.compile("(?m)^iotarget_pressure_io_waiting_seconds_total\\{group=\"/tenants/a\"} (\\S+)$").matcher(metrics);
                assertTrue(waiting.find(), metrics);
                double waitingS = Double.parseDouble(waiting.group(1));
                assertTrue(Math.abs(waitingS - heldUs / 1e6) <= heldUs / 1e6 / 20, "waiting " + waitingS + " s, held " + heldUs / 1e6 + " s");
                assertTrue(metrics.contains("iotarget_pressure_io_stalled_seconds_total{group=\"/tenants/b\"} 0.0"), metrics);
            }
        }
    }

    @Test
    void aWatchEndsWithEnodevWhenItsGroupIsRemoved() throws Exception {
        String config = """
                { "server": { "control": "127.0.0.1:0" },
                  "cgroup": { "tenants": { "c": {} } } }
                """;
        try (Server server = Server.start(new ObjectMapper().readTree(config), dir)) {
            Pressure pressure = server.engine().controller().tree().pressure();
            int baseline = pressure.triggerCount();
            CompletableFuture<Cli> watch = CompletableFuture.supplyAsync(() -> cli(server, "watch", "tenants/c/io.pressure", "some 150000 1000000"));
            Await.until(Duration.ofSeconds(5), () -> pressure.triggerCount() != baseline, () -> "the watch holds its trigger");
            assertEquals(baseline + 1, pressure.triggerCount(), "the watch holds its trigger");

            assertEquals(0, cli(server, "rmdir", "tenants/c").code());
            Cli ended = watch.get(5, TimeUnit.SECONDS);
            assertEquals(1, ended.code(), ended.toString());
            assertTrue(ended.err().contains("(ENODEV): tenants/c/io.pressure: its group was removed"), ended.err());
            Await.until(Duration.ofSeconds(5), () -> pressure.triggerCount() == baseline,
                    () -> "the trigger went with the watch: " + pressure.triggerCount() + " triggers, " + baseline + " before");
        }
    }
}
