package io.iotarget.control.http;

import io.iotarget.testkit.Await;
import io.iotarget.testkit.FuzzBudget;
import io.iotarget.testkit.Mutation;
import io.iotarget.testkit.ProcessResources;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Misbehaving HTTP clients against a live control endpoint, thousands of them, one after
 * another: well-formed requests pipelined one to four at a time (with and without the token,
 * cross-origin, the wrong method or type, chunked bodies), the same mutated (bit flips, byte
 * changes, insertions, cuts), random bytes, lines, headers and bodies over their limits, and
 * requests cut anywhere and then closed, reset, or left stalled.
 *
 * <p>Checked per case: every request of a well-formed pipeline gets exactly one answer, in
 * order, and no answer is a 5xx; over-long parts get 413, 414 or 431. Checked afterwards: the
 * server closed every stalled connection within its deadlines, it keeps no connection, its
 * threads, descriptors and memory are back at the baseline, and a good request is answered.
 *
 * <p>Budget: {@code -Diotarget.fuzz.cases} / {@code .seconds} / {@code .seed} (testkit's
 * {@link FuzzBudget}); at least {@link #MIN_CASES} must run.
 */
class ControlSocketFuzzTest {
    /**
     * Over the baseline. Threads: carriers of the virtual threads requests run on and JIT
     * compiler threads (one per core of each, 2 cores). Descriptors: jar files opened for
     * classes first used during the run. Direct memory: NIO's per-thread temporaries. Heap and
     * RSS: the JIT's and class loading's data and Netty's pooled buffers, kept once grown.
     */
    private static final ProcessResources.Tolerance TOLERANCE = new ProcessResources.Tolerance(4, 4, 8 << 20, 64 << 20, 128L << 20);
    /** Cases before the baseline: classes, the JIT and the buffer pools settle. */
    private static final long WARM_UP_CASES = 300;
    /** Fewer than this would not be a fuzz run (unless asked for with -Diotarget.fuzz.cases). */
    private static final long MIN_CASES = 1_000;
    /** Stalled connections kept open at once; the server must close them all at its head deadline. */
    private static final int MAX_STALLED = 64;
    private static final Pattern STATUS_LINE = Pattern.compile("(?m)^HTTP/1\\.1 (\\d{3}) ");

    @Test
    void misbehavingClientsLeaveNothingBehindAndAGoodClientStillWorks() throws Exception {
        try (LiveEndpoint live = new LiveEndpoint()) {
            FuzzBudget budget = new FuzzBudget("ControlSocketFuzzTest", 3000);
            Map<String, Integer> endings = new HashMap<>();
            List<Socket> stalled = new ArrayList<>();
            ProcessResources baseline = null;
            while (budget.another()) {
                long n = budget.done();
                try {
                    endings.merge(oneCase(live, new Random(budget.random(n).nextLong()), stalled), 1, Integer::sum);   // seeds n, n+1 start alike
                } catch (AssertionError | IOException e) {
                    throw new AssertionError("case " + n + " (seed " + budget.seed() + "): " + e.getMessage(), e);
                }
                if (n == WARM_UP_CASES) baseline = awaitQuiet(live, stalled);
            }
            System.out.println("ControlSocketFuzzTest: " + budget.done() + " cases " + endings + ", " + live.endpoint.load());
            assertTrue(budget.done() >= Math.min(MIN_CASES, Long.getLong("iotarget.fuzz.cases", MIN_CASES)),
                    "only " + budget.done() + " cases ran in the time budget");
            assertTrue(baseline != null, "the warm-up ended");
            ProcessResources quiet = awaitQuiet(live, stalled);
            String excess = ProcessResources.awaitNear(baseline, TOLERANCE, 20_000);
            assertNull(excess, "back to the baseline " + baseline + " (now " + quiet + ")");
            String answer = live.exchange(live.fill(request("GET", "/v1/read?path=io.stat", true, null).getBytes(StandardCharsets.ISO_8859_1)), 5_000);
            assertTrue(answer.startsWith("HTTP/1.1 200 "), "a good request is answered: " + answer);
        }
    }

    /**
     * Waits for the server to close every stalled connection (within the head's deadline: each
     * stalled in its first request), then for it to keep none, then takes a snapshot.
     */
    private static ProcessResources awaitQuiet(LiveEndpoint live, List<Socket> stalled) throws Exception {
        long deadline = System.nanoTime() + ControlEndpoint.HEAD_TIMEOUT_NS + TimeUnit.SECONDS.toNanos(5);
        for (Socket s : stalled) {
            s.setSoTimeout((int) Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            try (s) {
                InputStream in = s.getInputStream();
                while (in.read() >= 0) {
                    // an answer to what was sent, then the close
                }
            } catch (SocketException reset) {
                // closed by the server with our bytes unread
            }
        }
        stalled.clear();
        Await.within(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())), () -> live.endpoint.load().connections() == 0);
        assertEquals(0, live.endpoint.load().connections(), "every connection ended");
        ProcessResources.awaitNear(ProcessResources.now(), TOLERANCE, 0);
        return ProcessResources.now();
    }

    /** One misbehaving client; returns how it ended, for the tally. */
    private static String oneCase(LiveEndpoint live, Random random, List<Socket> stalled) throws IOException {
        int count = 1 + random.nextInt(4);
        StringBuilder pipeline = new StringBuilder();
        int firstLength = 0;
        for (int i = 0; i < count; i++) {
            pipeline.append(wellFormed(random, i == count - 1 && random.nextBoolean()));
            if (i == 0) firstLength = live.fill(pipeline.toString().getBytes(StandardCharsets.ISO_8859_1)).length;
        }
        byte[] bytes = live.fill(pipeline.toString().getBytes(StandardCharsets.ISO_8859_1));
        switch (random.nextInt(10)) {
            case 0, 1, 2 -> {
                String answer = live.exchange(bytes, 10_000);
                List<Integer> statuses = statuses(answer);
                assertEquals(count, statuses.size(), "one answer per request: " + pipeline + "\n---\n" + answer);
                return "answered " + count;
            }
            case 3, 4 -> {
                statuses(live.exchange(Mutation.mutate(bytes, random), 10_000));
                return "mutated";
            }
            case 5 -> {
                byte[] garbage = new byte[random.nextInt(512)];
                random.nextBytes(garbage);
                statuses(live.exchange(garbage, 10_000));
                return "garbage";
            }
            case 6 -> {
                String kind = switch (random.nextInt(3)) {
                    case 0 -> "GET /v1/read?path=" + "a".repeat(ControlEndpoint.MAX_LINE_BYTES) + " HTTP/1.1\r\n\r\n";
                    case 1 -> "GET /v1/list HTTP/1.1\r\nHost: HOST\r\nX-Pad: " + "p".repeat(ControlEndpoint.MAX_HEADER_BYTES) + "\r\n\r\n";
                    default -> request("POST", "/v1/write?path=io.max", true, "x".repeat(ControlEndpoint.MAX_VALUE_BYTES + 1));
                };
                List<Integer> statuses = statuses(live.exchange(live.fill(kind.getBytes(StandardCharsets.ISO_8859_1)), 10_000));
                assertEquals(1, statuses.size(), "one answer to an over-long request");
                assertTrue(List.of(413, 414, 431).contains(statuses.getFirst()), "over-long: " + statuses);
                return "over-long";
            }
            default -> {
                Socket s = new Socket("127.0.0.1", live.port());
                int ending = random.nextInt(3);
                // A stalled client stops within its first request, so that the head's deadline (not the idle timeout of one that showed the token) ends it.
                s.getOutputStream().write(bytes, 0, random.nextInt(ending == 2 ? Math.min(firstLength, bytes.length) : bytes.length));
                switch (ending) {
                    case 0 -> {
                        s.setSoLinger(true, 0);                          // RST
                        s.close();
                        return "cut, reset";
                    }
                    case 1 -> {
                        s.close();
                        return "cut, closed";
                    }
                    default -> {
                        if (stalled.size() >= MAX_STALLED) {
                            s.close();
                            return "cut, closed";
                        }
                        stalled.add(s);
                        return "cut, stalled";
                    }
                }
            }
        }
    }

    /** The status of every answer, checking that each is HTTP/1.1 and none is a 5xx. */
    private static List<Integer> statuses(String answer) {
        List<Integer> statuses = new ArrayList<>();
        if (answer.isEmpty()) return statuses;
        assertTrue(answer.startsWith("HTTP/1.1 "), "not an HTTP/1.1 response: " + answer);
        Matcher m = STATUS_LINE.matcher(answer);
        while (m.find()) statuses.add(Integer.parseInt(m.group(1)));
        for (int status : statuses) assertTrue(status < 500, "a server error: " + answer);
        return statuses;
    }

    /** A request the endpoint must answer: reads, changes, refusals of every kind. */
    private static String wellFormed(Random random, boolean close) {
        String r = switch (random.nextInt(12)) {
            case 0 -> request("GET", "/v1/read?path=io.stat", true, null);
            case 1 -> request("GET", "/v1/list?path=", true, null);
            case 2 -> request("POST", "/v1/mkdir?path=g" + random.nextInt(8), true, "");
            case 3 -> request("POST", "/v1/write?path=cgroup.subtree_control", true, random.nextBoolean() ? "+io" : "-io");
            case 4 -> request("GET", "/metrics", true, null);
            case 5 -> request("GET", "/v1/devices", false, null);                        // 401
            case 6 -> request("GET", "/", false, null);                                  // the login page
            case 7 -> request("OPTIONS", "/v1/list", true, null);                        // 405
            case 8 -> request("POST", "/v1/write?path=io.max", true, "x").replace("Content-Type: application/octet-stream\r\n", "");
            case 9 -> request("GET", "/v1/list", true, null).replace("\r\n\r\n", "\r\nOrigin: http://evil.example\r\n\r\n");
            case 10 -> "POST /v1/write?path=g1/io.weight HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer TOKEN\r\n"
                       + "Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n150\r\n0\r\n\r\n";
            default -> request("GET", "/v1/read?path=%2Fno%2Fsuch", true, null);
        };
        return close ? r.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n") : r;
    }

    private static String request(String method, String target, boolean token, String body) {
        StringBuilder r = new StringBuilder(method + " " + target + " HTTP/1.1\r\nHost: HOST\r\n");
        if (token) r.append("Authorization: Bearer TOKEN\r\n");
        if (body != null) r.append("Content-Type: application/octet-stream\r\nContent-Length: ").append(body.length()).append("\r\n");
        return r.append("\r\n").append(body == null ? "" : body).toString();
    }

}
