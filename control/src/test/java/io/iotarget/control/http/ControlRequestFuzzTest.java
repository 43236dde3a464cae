package io.iotarget.control.http;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.AfterAll;

import java.io.IOException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Coverage-guided fuzz target for the control endpoint's request handling, through a socket to
 * a live endpoint: any bytes as what a client sends (then FIN), with {@code TOKEN} and
 * {@code HOST} standing for the real token and address so that the fuzzer reaches past
 * admission into the operations. Netty's codec frames the requests; ours are the checks on
 * Host, Origin/Referer, token, cookie, method and Content-Type, the query's decoding and the
 * tree operations. Whatever comes, every answer is a well-formed HTTP/1.1 response, none is a
 * 500 (an exception that was not a refusal), and the server closes the connection once it has
 * answered what it was sent (an io.pressure watch's stream aside).
 */
class ControlRequestFuzzTest {
    private static final Pattern STATUS_LINE = Pattern.compile("(?m)^HTTP/1\\.1 (\\d{3}) ");
    private static LiveEndpoint live;

    private static synchronized LiveEndpoint live() throws IOException {
        if (live == null) live = new LiveEndpoint();
        return live;
    }

    @AfterAll
    static void stop() throws IOException {
        if (live != null) live.close();
        live = null;
    }

    @FuzzTest
    @SuppressWarnings("try")      // the detector's scope is the try block
    @DictionaryEntries({"GET ", "POST ", "OPTIONS ", " HTTP/1.1\\x0d\\x0a", " HTTP/1.0\\x0d\\x0a", "\\x0d\\x0a", "Host: HOST\\x0d\\x0a", "Authorization: Bearer TOKEN\\x0d\\x0a",
            "Content-Type: application/octet-stream\\x0d\\x0a", "Content-Length: ", "Transfer-Encoding: chunked\\x0d\\x0a", "Connection: close\\x0d\\x0a",
            "Expect: 100-continue\\x0d\\x0a", "Origin: http://HOST\\x0d\\x0a", "Referer: ", "Cookie: iotarget-", "/v1/read?path=", "/v1/write?path=",
            "/v1/list?path=", "/v1/mkdir?path=", "/v1/rmdir?path=", "/v1/watch?path=", "/v1/devices", "/v1/save", "/v1/web-login",
            "/metrics", "/login?code=", "/web/view.js", "io.max", "io.stat", "io.pressure", "cgroup.subtree_control", "+io", "%2F", "%",
            "some 150000 1000000", "259:0 riops=100"})
    void everyAnswerIsWellFormedAndNoneIsAnInternalError(byte[] input) throws Exception {
        // Loopback only: the SSRF detector would report the test's own connections to its server.
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections((host, port) -> host.contains("127.0.0.1") || host.equals("localhost"))) {
            LiveEndpoint endpoint = live();
            String answer = endpoint.exchange(endpoint.fill(input), 5_000);     // fails unless the server closes well before its deadlines
            if (answer.isEmpty()) return;                                // nothing complete was sent
            assertTrue(answer.startsWith("HTTP/1.1 "), "not an HTTP/1.1 response: " + answer);
            Matcher status = STATUS_LINE.matcher(answer);
            while (status.find()) {
                int code = Integer.parseInt(status.group(1));
                assertTrue(code < 500, "an internal error: " + answer);
            }
        }
    }
}
