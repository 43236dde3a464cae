package io.iotarget.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * The few etcd v3 calls the cluster needs (leases, put, range, transactions, watch), spoken as
 * JSON over HTTP/1.1 (HTTP/2 with TLS) to etcd's gRPC gateway, which every etcd 3.4+ member serves on its client
 * port ({@code /v3/...}): the JDK's HTTP client and Jackson, no gRPC stack (docs/decisions.md,
 * "etcd through its JSON gateway"). Each call is one request, sent when the method is called, so
 * the caller knows when a keep-alive left ({@link Membership}'s fence counts from there).
 *
 * <p>Endpoints: the member that answered last is asked first; a member that cannot be reached or
 * times out moves the client to the next one and the call fails (the caller tries again, so a
 * failure costs at most one {@code timeout}). TLS when a CA file is given (https to every
 * member, a client certificate if one is given); etcd's user/password authentication when a user
 * is given: the token is fetched on first use and again when etcd says it is no longer valid.
 *
 * <p>Any thread may call; calls from several threads run concurrently (the HTTP client pools
 * connections). Keys and values are bytes on the wire (base64 in the JSON); keys are UTF-8 here.
 */
public final class EtcdClient implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Base64.Encoder B64 = Base64.getEncoder();
    private static final Base64.Decoder B64D = Base64.getDecoder();

    /** One key as etcd holds it: its value, the revision of its last change, and its lease (0: none). */
    public record KeyValue(String key, byte[] value, long modRevision, long lease) {
        public String valueText() {
            return new String(value, StandardCharsets.UTF_8);
        }
    }

    /** A range's keys and the store's revision they were read at. */
    public record Range(long revision, List<KeyValue> kvs) {
    }

    /** A granted lease: its id and the TTL the server gave it, in seconds (it may round up). */
    public record Lease(long id, long ttlSeconds) {
    }

    /** One change a watch saw: a put (with the new value) or a delete (value empty), at its revision. */
    public record Event(boolean put, KeyValue kv) {
    }

    /** A running watch; {@link #close} ends it. */
    public interface Watch extends AutoCloseable {
        @Override
        void close();
    }

    /** Where and how to reach etcd: a CA file turns on TLS; a user turns on authentication. Null fields are not used. */
    public record Access(Path caFile, Path certFile, Path keyFile, String user, Path passwordFile) {
        public static final Access NONE = new Access(null, null, null, null, null);
    }

    private final List<String> endpoints;
    private final Duration timeout;
    private final Access access;
    private final ExecutorService executor;
    private final HttpClient http;
    private volatile int current;
    private volatile String token;

    private EtcdClient(List<String> endpoints, Duration timeout, Access access, SSLContext tls) {
        this.endpoints = endpoints;
        this.timeout = timeout;
        this.access = access;
        this.executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "iotarget-etcd-http");
            t.setDaemon(true);
            return t;
        });
        // Plain: HTTP/1.1 (the JDK client would try an h2c upgrade etcd does not answer). TLS: HTTP/2,
        // because etcd offers only h2 in ALPN and Go refuses a client that offers only http/1.1.
        HttpClient.Builder b = HttpClient.newBuilder().version(tls == null ? HttpClient.Version.HTTP_1_1 : HttpClient.Version.HTTP_2)
                .connectTimeout(timeout).executor(executor);
        if (tls != null) b.sslContext(tls);
        this.http = b.build();
    }

    /**
     * A client for {@code etcd://HOST:PORT[,HOST:PORT...]}.
     *
     * @param timeout how long one call may take (connecting included) before it fails
     * @throws IOException the TLS files could not be read
     */
    public static EtcdClient create(String uri, Access access, Duration timeout) throws IOException {
        String problem = problem(uri);
        if (problem != null) throw new IllegalArgumentException(uri + ": " + problem);
        String scheme = access.caFile() != null ? "https://" : "http://";
        List<String> endpoints = new ArrayList<>();
        for (String hostPort : uri.substring("etcd://".length()).split(",")) endpoints.add(scheme + hostPort.strip());
        return new EtcdClient(List.copyOf(endpoints), timeout, access, access.caFile() != null ? tls(access) : null);
    }

    /** Why {@code uri} is not {@code etcd://HOST:PORT[,HOST:PORT...]}; null when it is. */
    public static String problem(String uri) {
        if (!uri.startsWith("etcd://")) return "another scheme";
        String rest = uri.substring("etcd://".length());
        if (rest.isBlank()) return "no endpoint";
        for (String hostPort : rest.split(",", -1)) {
            String hp = hostPort.strip();
            int colon = hp.lastIndexOf(':');
            if (colon <= 0 || colon == hp.length() - 1) return "'" + hp + "' is not HOST:PORT";
            String port = hp.substring(colon + 1);
            if (!port.matches("\\d{1,5}") || Integer.parseInt(port) > 65535) return "'" + hp + "' has no port 1-65535";
            if (hp.contains("/")) return "'" + hp + "' is not HOST:PORT (no path)";
        }
        return null;
    }

    private static SSLContext tls(Access access) throws IOException {
        try {
            CertificateFactory x509 = CertificateFactory.getInstance("X.509");
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            int n = 0;
            for (Certificate c : certificates(x509, access.caFile())) trust.setCertificateEntry("ca" + n++, c);
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            KeyManagerFactory kmf = null;
            if (access.certFile() != null) {
                if (access.keyFile() == null) throw new IOException("a client certificate needs its key file");
                KeyStore keys = KeyStore.getInstance(KeyStore.getDefaultType());
                keys.load(null, null);
                Collection<? extends Certificate> chain = certificates(x509, access.certFile());
                keys.setKeyEntry("client", privateKey(access.keyFile()), new char[0], chain.toArray(Certificate[]::new));
                kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(keys, new char[0]);
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IOException("etcd TLS files: " + e.getMessage(), e);
        }
    }

    private static Collection<? extends Certificate> certificates(CertificateFactory x509, Path file) throws IOException, GeneralSecurityException {
        return x509.generateCertificates(new ByteArrayInputStream(Files.readAllBytes(file)));
    }

    /** A PKCS#8 PEM key ({@code BEGIN PRIVATE KEY}), RSA or EC: what {@code openssl pkcs8 -topk8 -nocrypt} writes. */
    private static PrivateKey privateKey(Path file) throws IOException, GeneralSecurityException {
        String pem = Files.readString(file);
        int begin = pem.indexOf("-----BEGIN PRIVATE KEY-----");
        int end = pem.indexOf("-----END PRIVATE KEY-----");
        if (begin < 0 || end < 0) throw new IOException(file + ": not a PKCS#8 PEM key (BEGIN PRIVATE KEY); convert with openssl pkcs8 -topk8 -nocrypt");
        byte[] der = Base64.getMimeDecoder().decode(pem.substring(begin + "-----BEGIN PRIVATE KEY-----".length(), end));
        GeneralSecurityException last = null;
        for (String algorithm : List.of("RSA", "EC", "Ed25519")) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                last = e;
            }
        }
        throw last;
    }

    private static String b64(String s) {
        return B64.encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    /** The end of the range of every key starting with {@code prefix}: the prefix with its last byte increased. */
    static byte[] prefixEnd(byte[] prefix) {
        byte[] end = prefix.clone();
        for (int i = end.length - 1; i >= 0; i--) {
            if (end[i] != (byte) 0xff) {
                end[i]++;
                return java.util.Arrays.copyOf(end, i + 1);
            }
        }
        return new byte[] {0};                 // all 0xff: to the end of the key space
    }

    private static String b64End(String prefix) {
        return B64.encodeToString(prefixEnd(prefix.getBytes(StandardCharsets.UTF_8)));
    }

    /** Grants a lease of {@code ttlSeconds}; the server may give a longer one (its minimum TTL). */
    public Lease grant(long ttlSeconds) throws IOException {
        ObjectNode body = JSON.createObjectNode().put("TTL", ttlSeconds);
        JsonNode r = call("/v3/lease/grant", body);
        return new Lease(r.path("ID").asLong(), r.path("TTL").asLong());
    }

    /** One keep-alive of lease {@code id}: the TTL it now has in seconds, 0 when the lease no longer exists. */
    public long keepAlive(long id) throws IOException {
        JsonNode r = call("/v3/lease/keepalive", JSON.createObjectNode().put("ID", Long.toString(id)));
        return r.path("result").path("TTL").asLong(0);
    }

    /** Whether lease {@code id} exists now (granted, neither expired nor revoked): read from the store, not from any keep-alive. */
    public boolean leaseAlive(long id) throws IOException {
        JsonNode r = call("/v3/lease/timetolive", JSON.createObjectNode().put("ID", Long.toString(id)));
        return r.path("TTL").asLong(-1) > 0;
    }

    /** Revokes lease {@code id}, deleting its keys; a lease already gone is not an error. */
    public void revoke(long id) throws IOException {
        try {
            call("/v3/lease/revoke", JSON.createObjectNode().put("ID", Long.toString(id)));
        } catch (IOException e) {
            if (!String.valueOf(e.getMessage()).contains("lease not found")) throw e;
        }
    }

    /** Puts {@code key} = {@code value}, attached to lease {@code lease} (0: none); returns the revision of the write. */
    public long put(String key, byte[] value, long lease) throws IOException {
        ObjectNode body = JSON.createObjectNode().put("key", b64(key)).put("value", B64.encodeToString(value));
        if (lease != 0) body.put("lease", Long.toString(lease));
        return call("/v3/kv/put", body).path("header").path("revision").asLong();
    }

    /** Every key starting with {@code prefix}, read linearizably. */
    public Range range(String prefix) throws IOException {
        ObjectNode body = JSON.createObjectNode().put("key", b64(prefix)).put("range_end", b64End(prefix));
        JsonNode r = call("/v3/kv/range", body);
        return new Range(r.path("header").path("revision").asLong(), kvs(r.path("kvs")));
    }

    /**
     * The one key {@code key}, read linearizably: etcd's range without a range end, so a key that
     * {@code key} is a prefix of ({@code .../1} of {@code .../10}) is not read with it. The range
     * holds that key or nothing.
     */
    public Range get(String key) throws IOException {
        JsonNode r = call("/v3/kv/range", JSON.createObjectNode().put("key", b64(key)));
        return new Range(r.path("header").path("revision").asLong(), kvs(r.path("kvs")));
    }

    /** Every key under each of {@code prefixes}, all at one revision (one transaction of ranges). */
    public List<Range> ranges(List<String> prefixes) throws IOException {
        ObjectNode body = JSON.createObjectNode();
        ArrayNode success = body.putArray("success");
        for (String p : prefixes) success.addObject().putObject("request_range").put("key", b64(p)).put("range_end", b64End(p));
        JsonNode r = call("/v3/kv/txn", body);
        long revision = r.path("header").path("revision").asLong();
        List<Range> out = new ArrayList<>();
        for (JsonNode response : r.path("responses")) out.add(new Range(revision, kvs(response.path("response_range").path("kvs"))));
        while (out.size() < prefixes.size()) out.add(new Range(revision, List.of()));   // etcd's JSON leaves out empty answers
        return out;
    }

    /** A put for {@link #txn}. */
    public record Put(String key, byte[] value, long lease) {
    }

    /**
     * Puts all of {@code puts} atomically if no key under any of {@code prefixes} changed after
     * {@code revision} (each prefix's keys all have a mod revision at most that); false when one
     * did (nothing is written then). A key deleted since is not seen by the comparison.
     */
    public boolean txn(List<String> prefixes, long revision, List<Put> puts) throws IOException {
        ObjectNode body = JSON.createObjectNode();
        ArrayNode compare = body.putArray("compare");
        for (String p : prefixes) {
            compare.addObject().put("key", b64(p)).put("range_end", b64End(p)).put("target", "MOD").put("result", "LESS")
                    .put("mod_revision", Long.toString(revision + 1));
        }
        ArrayNode success = body.putArray("success");
        for (Put p : puts) {
            ObjectNode put = success.addObject().putObject("request_put").put("key", b64(p.key())).put("value", B64.encodeToString(p.value()));
            if (p.lease() != 0) put.put("lease", Long.toString(p.lease()));
        }
        return call("/v3/kv/txn", body).path("succeeded").asBoolean(false);
    }

    /**
     * A condition of {@link #txn(List, List, List)} on one key (exactly that key, not a prefix):
     * its create revision ({@code create} true; 0 = the key does not exist) or its mod revision
     * equals {@code revision}.
     */
    public record Compare(String key, boolean create, long revision) {
        /** The key does not exist. */
        public static Compare absent(String key) {
            return new Compare(key, true, 0);
        }

        /** The key was last changed at {@code modRevision}, unchanged since it was read (0: it does not exist, as etcd compares a missing key). */
        public static Compare unchanged(String key, long modRevision) {
            return new Compare(key, false, modRevision);
        }
    }

    /**
     * Puts all of {@code puts} and deletes every key of {@code deletes} atomically if every
     * compare holds (one compare per key, so a deleted key is seen): a compare-and-swap on single
     * keys, where {@link #txn(List, long, List)} compares whole prefixes.
     *
     * @return the revision of the write, or -1 when a compare did not hold (nothing is written then)
     */
    public long txn(List<Compare> compares, List<Put> puts, List<String> deletes) throws IOException {
        ObjectNode body = JSON.createObjectNode();
        ArrayNode compare = body.putArray("compare");
        for (Compare c : compares) {
            ObjectNode o = compare.addObject().put("key", b64(c.key())).put("result", "EQUAL");
            if (c.create()) o.put("target", "CREATE").put("create_revision", Long.toString(c.revision()));
            else o.put("target", "MOD").put("mod_revision", Long.toString(c.revision()));
        }
        ArrayNode success = body.putArray("success");
        for (Put p : puts) {
            ObjectNode put = success.addObject().putObject("request_put").put("key", b64(p.key())).put("value", B64.encodeToString(p.value()));
            if (p.lease() != 0) put.put("lease", Long.toString(p.lease()));
        }
        for (String key : deletes) success.addObject().putObject("request_delete_range").put("key", b64(key));
        JsonNode r = call("/v3/kv/txn", body);
        return r.path("succeeded").asBoolean(false) ? r.path("header").path("revision").asLong() : -1;
    }

    /** Deletes {@code key} (exactly that key); a key that does not exist is not an error. */
    public void delete(String key) throws IOException {
        call("/v3/kv/deleterange", JSON.createObjectNode().put("key", b64(key)));
    }

    private static List<KeyValue> kvs(JsonNode array) {
        List<KeyValue> out = new ArrayList<>();
        for (JsonNode kv : array) out.add(keyValue(kv));
        return out;
    }

    private static KeyValue keyValue(JsonNode kv) {
        return new KeyValue(new String(B64D.decode(kv.path("key").asText("")), StandardCharsets.UTF_8),
                            B64D.decode(kv.path("value").asText("")), kv.path("mod_revision").asLong(), kv.path("lease").asLong());
    }

    /**
     * Watches every key under {@code prefix} from {@code fromRevision} on; {@code events} is called
     * on the watch's own thread for each change, in order; {@code ended} once, when the stream
     * ends or fails (not after {@link Watch#close}): the caller reads again and watches anew.
     */
    public Watch watch(String prefix, long fromRevision, Consumer<Event> events, Consumer<String> ended) {
        ObjectNode body = JSON.createObjectNode();
        body.putObject("create_request").put("key", b64(prefix)).put("range_end", b64End(prefix)).put("start_revision", Long.toString(fromRevision));
        int endpoint = current;
        boolean[] closed = new boolean[1];
        Stream<String>[] lines = newStreamHolder();
        Thread thread = Thread.ofPlatform().daemon().name("iotarget-etcd-watch").start(() -> {
            String why = "ended";
            try {
                HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(endpoints.get(endpoint) + "/v3/watch"))
                        .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
                authorize(request);
                HttpResponse<Stream<String>> response = http.send(request.build(), HttpResponse.BodyHandlers.ofLines());
                synchronized (lines) {
                    lines[0] = response.body();
                    if (closed[0]) lines[0].close();
                }
                if (response.statusCode() != 200) {
                    why = "HTTP " + response.statusCode();
                } else {
                    for (String line : (Iterable<String>) response.body()::iterator) {
                        JsonNode result = JSON.readTree(line).path("result");
                        if (result.path("canceled").asBoolean(false) || result.path("compact_revision").asLong(0) != 0) {
                            why = "canceled: " + result.path("cancel_reason").asText("compacted");
                            break;
                        }
                        for (JsonNode e : result.path("events")) events.accept(new Event(!e.path("type").asText("PUT").equals("DELETE"), keyValue(e.path("kv"))));
                    }
                }
            } catch (IOException | RuntimeException e) {
                why = String.valueOf(e.getMessage());
                moveOn(endpoint);
            } catch (InterruptedException e) {
                why = "interrupted";
            }
            synchronized (lines) {
                if (closed[0]) return;
            }
            ended.accept(why);
        });
        return () -> {
            synchronized (lines) {
                closed[0] = true;
                if (lines[0] != null) lines[0].close();
            }
            thread.interrupt();
        };
    }

    @SuppressWarnings("unchecked")
    private static Stream<String>[] newStreamHolder() {
        return (Stream<String>[]) new Stream<?>[1];
    }

    private void authorize(HttpRequest.Builder request) throws IOException, InterruptedException {
        if (access.user() == null) return;
        String t = token;
        if (t == null) t = authenticate();
        request.header("Authorization", t);
    }

    private String authenticate() throws IOException, InterruptedException {
        String password = Files.readString(access.passwordFile()).strip();
        ObjectNode body = JSON.createObjectNode().put("name", access.user()).put("password", password);
        JsonNode r = post(current, "/v3/auth/authenticate", body, false);
        String t = r.path("token").asText(null);
        if (t == null) throw new IOException("etcd authentication answered no token");
        token = t;
        return t;
    }

    /** One call on the current member; on a failure to reach it, the next member is current and the call fails. */
    private JsonNode call(String path, ObjectNode body) throws IOException {
        int endpoint = current;
        try {
            try {
                return post(endpoint, path, body, true);
            } catch (StaleToken e) {
                token = null;
                return post(endpoint, path, body, true);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } catch (EtcdError e) {
            throw e;                                         // etcd answered: the member is fine
        } catch (IOException e) {
            moveOn(endpoint);
            throw new IOException(endpoints.get(endpoint) + ": " + e, e);
        }
    }

    private void moveOn(int failed) {
        if (current == failed) current = (failed + 1) % endpoints.size();
    }

    /** etcd answered with an error (it is reachable; the request was refused). */
    public static class EtcdError extends IOException {
        private static final long serialVersionUID = 1L;

        EtcdError(String message) {
            super(message);
        }
    }

    private static final class StaleToken extends EtcdError {
        private static final long serialVersionUID = 1L;

        StaleToken(String message) {
            super(message);
        }
    }

    private JsonNode post(int endpoint, String path, ObjectNode body, boolean authorized) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(endpoints.get(endpoint) + path)).timeout(timeout)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        if (authorized) authorize(request);
        HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        JsonNode json = response.body().isEmpty() ? JSON.createObjectNode() : JSON.readTree(response.body());
        // Errors come as {"error":"...","message":"..."} with an HTTP error status, or, from a
        // streaming call (keep-alive, watch), as {"error":{"message":"..."}} with 200.
        JsonNode error = json.path("error").isObject() ? json.path("error") : json.has("error") ? json : null;
        if (response.statusCode() != 200 || error != null) {
            String message = error == null ? "HTTP " + response.statusCode() : error.path("message").asText(error.path("error").asText("HTTP " + response.statusCode()));
            if (message.contains("auth token")) throw new StaleToken(path + ": " + message);
            // A member without a leader, or one that timed out or is stopping: the next may do.
            if (message.contains("leader") || message.contains("timed out") || message.contains("unavailable") || message.contains("stopped")
                || response.statusCode() == 503) {
                throw new IOException(path + ": " + message);
            }
            throw new EtcdError(path + ": " + message);
        }
        return json;
    }

    /** The endpoint asked first now, for logs: {@code http://HOST:PORT}. */
    public String currentEndpoint() {
        return endpoints.get(current);
    }

    @Override
    public void close() {
        http.shutdownNow();
        executor.shutdownNow();
    }
}
