package io.iotarget.testkit;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A throwaway etcd cluster (Debian's {@code etcd-server}, scripts/install-test-deps) of N members
 * on loopback, for tests that lose the cluster store on purpose: each member has a free client
 * and peer port and a data directory {@code dir/mI}, and they meet through
 * {@code --initial-cluster}. Timing is set for tests, not for production: heartbeats every
 * {@link #HEARTBEAT_MS} ms and an election after {@link #ELECTION_MS} ms of silence, so a killed
 * leader is replaced in about half a second instead of the default one to two seconds.
 *
 * <p>{@link #kill} (SIGKILL, a crash), {@link #stop} and {@link #cont} (SIGSTOP/SIGCONT: alive,
 * connections open, silent), {@link #restart} (the same ports and data directory, so the member
 * rejoins with what it had acknowledged). Members are numbered from 0. Not thread-safe: the
 * test's own thread drives it.
 */
public final class EtcdCluster implements AutoCloseable {
    public static final String BINARY = "/usr/bin/etcd";
    /** Heartbeat interval: ten times etcd's loopback round trip is still far below it. */
    public static final int HEARTBEAT_MS = 50;
    /** Election timeout: ten heartbeats, etcd's recommended ratio. */
    public static final int ELECTION_MS = 500;

    private static final Pattern MEMBER_ID = Pattern.compile("\"member_id\"\\s*:\\s*\"?(\\d+)");
    private static final Pattern LEADER = Pattern.compile("\"leader\"\\s*:\\s*\"?(\\d+)");

    private final Path dir;
    private final int[] clientPorts;
    private final int[] peerPorts;
    private final Process[] processes;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();

    private EtcdCluster(Path dir, int[] clientPorts, int[] peerPorts) {
        this.dir = dir;
        this.clientPorts = clientPorts;
        this.peerPorts = peerPorts;
        this.processes = new Process[clientPorts.length];
    }

    /** {@link #start(Path, int)} with three members, the smallest cluster that survives one member's loss. */
    public static EtcdCluster start(Path dir) throws IOException, InterruptedException {
        return start(dir, 3);
    }

    /**
     * Starts {@code members} members, their data and logs under {@code dir}, and waits until every
     * one reports itself healthy (a leader is elected). Skips the test when etcd is not installed
     * (fails it under CI=true).
     */
    public static EtcdCluster start(Path dir, int members) throws IOException, InterruptedException {
        Tools.require("etcd", BINARY);
        if (members < 1) throw new IllegalArgumentException("members " + members);
        int[] ports = freePorts(2 * members);
        int[] client = new int[members];
        int[] peer = new int[members];
        for (int i = 0; i < members; i++) {
            client[i] = ports[2 * i];
            peer[i] = ports[2 * i + 1];
        }
        EtcdCluster cluster = new EtcdCluster(dir, client, peer);
        try {
            for (int i = 0; i < members; i++) cluster.launch(i);
            for (int i = 0; i < members; i++) cluster.awaitHealthy(i);
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    /** All ports at once, each socket held until every one is chosen, so no two are the same. */
    private static int[] freePorts(int n) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(s);
                ports[i] = s.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : held) s.close();
        }
    }

    public int size() {
        return clientPorts.length;
    }

    public int clientPort(int member) {
        return clientPorts[member];
    }

    /** {@code etcd://127.0.0.1:P0,127.0.0.1:P1,...}: what {@code cluster.store} takes. */
    public String uri() {
        return "etcd://" + String.join(",", hostPorts());
    }

    /** {@code 127.0.0.1:P} of every member, in member order. */
    public List<String> hostPorts() {
        List<String> out = new ArrayList<>();
        for (int p : clientPorts) out.add("127.0.0.1:" + p);
        return out;
    }

    /** {@code http://127.0.0.1:P} of every member, in member order: etcdctl's {@code --endpoints}. */
    public List<String> endpoints() {
        List<String> out = new ArrayList<>();
        for (int p : clientPorts) out.add("http://127.0.0.1:" + p);
        return out;
    }

    private void launch(int i) throws IOException {
        StringBuilder initial = new StringBuilder();
        for (int j = 0; j < size(); j++) {
            if (j > 0) initial.append(',');
            initial.append(name(j)).append("=http://127.0.0.1:").append(peerPorts[j]);
        }
        String client = "http://127.0.0.1:" + clientPorts[i];
        String peer = "http://127.0.0.1:" + peerPorts[i];
        Path data = dir.resolve(name(i));
        Files.createDirectories(dir);
        processes[i] = new ProcessBuilder(List.of(BINARY, "--name", name(i), "--data-dir", data.toString(),
                                                  "--listen-client-urls", client, "--advertise-client-urls", client,
                                                  "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                                  "--initial-cluster", initial.toString(), "--initial-cluster-state", "new",
                                                  "--initial-cluster-token", "iotarget-test",
                                                  "--heartbeat-interval", Integer.toString(HEARTBEAT_MS),
                                                  "--election-timeout", Integer.toString(ELECTION_MS),
                                                  "--logger", "zap", "--log-outputs", "stderr"))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve(name(i) + ".log").toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile())).start();
    }

    private static String name(int i) {
        return "m" + i;
    }

    /** Waits until member {@code i} answers {@code /health} with true (it is part of a cluster with a leader), for 20 s. */
    public void awaitHealthy(int i) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!healthy(i)) {
            if (!processes[i].isAlive()) throw new IOException("etcd " + name(i) + " exited " + processes[i].exitValue() + " (see " + dir.resolve(name(i) + ".log") + ")");
            if (System.nanoTime() > deadline) throw new IOException("etcd " + name(i) + " not healthy within 20 s (see " + dir.resolve(name(i) + ".log") + ")");
            Thread.sleep(20);
        }
    }

    /** True when member {@code i} answers {@code /health} with {@code "health":"true"} within a second. */
    public boolean healthy(int i) throws InterruptedException {
        String body = get(i, "/health");
        return body != null && body.replace(" ", "").contains("\"health\":\"true\"");
    }

    /**
     * The index of the member that is the leader, as the first member that answers within a second
     * says, or -1 when none answers or the leader it names is not one of them (no leader yet).
     */
    public int leader() throws InterruptedException {
        long[] ids = new long[size()];
        long leader = 0;
        for (int i = 0; i < size(); i++) {
            String body = post(i, "/v3/maintenance/status", "{}");
            if (body == null) continue;
            Matcher m = MEMBER_ID.matcher(body);
            Matcher l = LEADER.matcher(body);
            if (!m.find() || !l.find()) continue;
            ids[i] = Long.parseUnsignedLong(m.group(1));
            if (leader == 0) leader = Long.parseUnsignedLong(l.group(1));
        }
        if (leader == 0) return -1;
        for (int i = 0; i < size(); i++) if (ids[i] == leader) return i;
        return -1;
    }

    private String get(int i, String path) throws InterruptedException {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + clientPorts[i] + path)).timeout(Duration.ofSeconds(1)).GET().build());
    }

    private String post(int i, String path, String json) throws InterruptedException {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + clientPorts[i] + path)).timeout(Duration.ofSeconds(1))
                            .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    private String send(HttpRequest request) throws InterruptedException {
        try {
            HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? r.body() : null;
        } catch (IOException e) {
            return null;                                     // down, stopped or refusing: not an answer
        }
    }

    /** SIGKILL of member {@code i}, as a crash; its data directory stays for {@link #restart}. */
    public void kill(int i) throws InterruptedException {
        processes[i].destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGSTOP of member {@code i}: its sockets stay open but it answers nothing, until {@link #cont}. */
    public void stop(int i) throws IOException, InterruptedException {
        signal(i, "STOP");
    }

    /** SIGCONT after {@link #stop}. */
    public void cont(int i) throws IOException, InterruptedException {
        signal(i, "CONT");
    }

    private void signal(int i, String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(processes[i].pid())).inheritIO().start();
        if (kill.waitFor() != 0) throw new IOException("kill -" + name + " " + processes[i].pid() + " failed");
    }

    /**
     * Starts member {@code i} again (killing it first if it still runs) on the same ports with the
     * same data directory. Returns at once: a member alone cannot become healthy, so call
     * {@link #awaitHealthy} when a quorum is expected.
     */
    public void restart(int i) throws IOException, InterruptedException {
        if (processes[i] != null && processes[i].isAlive()) kill(i);
        launch(i);
    }

    public boolean alive(int i) {
        return processes[i] != null && processes[i].isAlive();
    }

    @Override
    public void close() {
        for (Process p : processes) {
            if (p == null) continue;
            p.destroyForcibly();
        }
        for (Process p : processes) {
            if (p == null) continue;
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
