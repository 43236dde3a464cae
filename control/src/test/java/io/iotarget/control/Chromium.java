package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.testkit.Tools;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Headless Chromium driven through the DevTools protocol: one page, commands sent as JSON over
 * its WebSocket (java.net.http), each awaited by id. A fresh profile per instance, no network
 * but loopback, nothing downloaded. Test thread only.
 */
final class Chromium implements AutoCloseable {
    static final String BINARY = "/usr/bin/chromium";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(20);

    private final Process process;
    private final Path profile;
    private final WebSocket socket;
    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();

    private Chromium(Process process, Path profile, WebSocket socket) {
        this.process = process;
        this.profile = profile;
        this.socket = socket;
    }

    /** Starts a browser with an empty page of {@code width} × {@code height} CSS pixels. */
    static Chromium start(int width, int height) throws Exception {
        Tools.require("chromium", BINARY);
        Path profile = Files.createTempDirectory("iotarget-chromium-");
        Process p = new ProcessBuilder(BINARY, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-proxy-server",
                "--user-data-dir=" + profile, "--remote-debugging-port=0", "--window-size=" + width + "," + height,
                "--hide-scrollbars", "about:blank").redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            String browser = devToolsUrl(p);
            URI list = URI.create("http://" + URI.create(browser).getRawAuthority() + "/json/list");
            HttpClient http = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();
            String page = null;
            for (JsonNode target : JSON.readTree(http.send(HttpRequest.newBuilder(list).build(), HttpResponse.BodyHandlers.ofString()).body())) {
                if (target.path("type").asText().equals("page")) page = target.path("webSocketDebuggerUrl").asText();
            }
            if (page == null) throw new IOException("chromium shows no page at " + list);
            Chromium[] self = new Chromium[1];
            WebSocket socket = http.newWebSocketBuilder().buildAsync(URI.create(page), new WebSocket.Listener() {
                private final StringBuilder message = new StringBuilder();

                @Override
                public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
                    message.append(data);
                    if (last) {
                        self[0].received(message.toString());
                        message.setLength(0);
                    }
                    ws.request(1);
                    return null;
                }
            }).get(10, TimeUnit.SECONDS);
            self[0] = new Chromium(p, profile, socket);
            self[0].call("Emulation.setDeviceMetricsOverride", Map.of("width", width, "height", height, "deviceScaleFactor", 1, "mobile", false));
            return self[0];
        } catch (Exception e) {
            p.destroyForcibly();
            CliProcess.deleteTree(profile);
            throw e;
        }
    }

    /** The browser's DevTools address, from the line Chromium prints on stderr when it listens. */
    private static String devToolsUrl(Process p) throws IOException {
        BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
        List<String> seen = new ArrayList<>();
        String line;
        while ((line = err.readLine()) != null) {
            int at = line.indexOf("ws://");
            if (line.startsWith("DevTools listening on") && at >= 0) {
                Thread drain = new Thread(() -> {
                    try {
                        err.transferTo(java.io.Writer.nullWriter());
                    } catch (IOException e) {
                        // the browser is gone
                    }
                }, "chromium-stderr");
                drain.setDaemon(true);
                drain.start();
                return line.substring(at).strip();
            }
            seen.add(line);
        }
        throw new IOException("chromium ended before listening:\n" + String.join("\n", seen));
    }

    private void received(String text) {
        try {
            JsonNode m = JSON.readTree(text);
            if (m.has("id")) {
                CompletableFuture<JsonNode> f = pending.remove(m.get("id").asInt());
                if (f != null) f.complete(m);
            }
        } catch (IOException e) {
            // not JSON: DevTools never sends that
        }
    }

    /** One DevTools command; its result, or an AssertionError with the protocol's error. */
    JsonNode call(String method, Map<String, ?> params) throws Exception {
        int id = ids.incrementAndGet();
        CompletableFuture<JsonNode> reply = new CompletableFuture<>();
        pending.put(id, reply);
        ObjectNode command = JSON.createObjectNode().put("id", id).put("method", method);
        command.set("params", JSON.valueToTree(params));
        socket.sendText(JSON.writeValueAsString(command), true).get(10, TimeUnit.SECONDS);
        JsonNode m = reply.get(COMMAND_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        if (m.has("error")) throw new AssertionError(method + ": " + m.get("error"));
        return m.get("result");
    }

    /** Opens {@code url} and waits until its document has loaded. */
    void navigate(String url) throws Exception {
        call("Page.navigate", Map.of("url", url));
        long deadline = System.nanoTime() + COMMAND_TIMEOUT.toNanos();
        while (!"complete".equals(evaluate("document.readyState").asText())) {
            if (System.nanoTime() > deadline) throw new AssertionError(url + " did not load within " + COMMAND_TIMEOUT);
            Thread.sleep(50);
        }
    }

    /** The value of a JavaScript expression in the page (promises awaited), or an AssertionError with the exception. */
    JsonNode evaluate(String expression) throws Exception {
        JsonNode r = call("Runtime.evaluate", Map.of("expression", expression, "returnByValue", true, "awaitPromise", true));
        if (r.has("exceptionDetails")) throw new AssertionError(expression + ": " + r.get("exceptionDetails"));
        return r.path("result").path("value");
    }

    /** The page as PNG, written to {@code file}. */
    void screenshot(Path file) throws Exception {
        String png = call("Page.captureScreenshot", Map.of("format", "png")).get("data").asText();
        Files.createDirectories(file.toAbsolutePath().getParent());
        Files.write(file, Base64.getDecoder().decode(png));
    }

    @Override
    public void close() throws IOException {
        socket.abort();
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        CliProcess.deleteTree(profile);
    }
}
