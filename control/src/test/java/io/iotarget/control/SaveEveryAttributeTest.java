package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.TestPki;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Nothing a tree holds is forgotten by a save: one directory of every kind is made, then every
 * file of every tree — found by walking the trees, not from a list — is written a value other
 * than its default where any of a set of candidates is taken; the server restarted from the
 * save must read back every file the same. A file added to a tree later (io.latency) is
 * walked, written and checked with no change here, unless no candidate fits it: then this test
 * names it, and a candidate belongs in {@link #candidates}.
 */
class SaveEveryAttributeTest {
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
    private static final String KEY = "DHHC-1:01:FZutw06N2trA/TvbhG4i6jXua32pSJce08/ZmPlk0jMEPvkB:";
    /** libnvme's test key (test/psk.c) in NVMe TLS PSK interchange format. */
    private static final String TLS_KEY = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";
    private static final String NQN = "nqn.2026-11.io.iotarget:every";
    /** Live numbers, not configuration: they differ after a restart by nature (and io.pressure's writes are triggers, kept by no file). */
    private static final Set<String> LIVE = Set.of("io.stat", "io.pressure");
    /**
     * Writable files that no value changes here, and why; anything else that stays at its
     * default fails the test.
     */
    private static final Map<String, String> UNCHANGEABLE = Map.of(
            "/cgroup/cgroup.subtree_control", "+io already, from the config: the groups below need it",
            "/cgroup/tenants/cgroup.subtree_control", "+io already, from the config: the groups below need it",
            "/backends/spare/enable", "the walk makes spare a memory backend with null_blk's completion_nsec and mbps, which only a null backend takes",
            "/backends/spare/revalidate_size", "an action, not a setting: it reads 0, and a disabled backend refuses it");
    /** The device the other trees use is left alone (an enabled backend's attributes are EBUSY); {@code spare} has them all changed. */
    private static final String DEVICE_IN_USE = "/backends/disk/";
    /** Pre-shared keys beside the certificates, for nbd's tls/psk_file. */
    private static final String PSK_FILE = "keys.psk";

    @TempDir
    Path dir;

    @Test
    void shouldKeepEveryWritableAttributeOfEveryTree() throws Exception {
        // disk is a null backend: the subsystem is made shared too, and a shared namespace may not be on memory.
        String config = """
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "disk": { "type": "null", "size": "64M", "device": "259:5", "enable": 1 }, "spare": {} },
                  "cgroup": { "cgroup.subtree_control": "+io", "tenants": { "cgroup.subtree_control": "+io", "a": {} } },
                  "nbd": { "exports": { "x": {} } },
                  "nvmet": { "hosts": { "%s": {} },
                             "subsystems": { "%s": { "namespaces": { "1": {} } } },
                             "ports": { "1": {} } } }
                """.formatted(HOST, NQN);
        Map<String, String> dumped;
        String saved;
        Map<String, String> defaults;
        try (Server server = Server.start(new ObjectMapper().readTree(config), dir)) {
            ConfigTree root = server.mounts();
            defaults = dump(root);
            Path credentials = TestPki.create(dir.resolve("ca"), "save test CA").server("server");
            Files.writeString(credentials.resolve(PSK_FILE), "alice:000102030405060708090a0b0c0d0e0f\n");   // psktool's format
            Set<String> unchanged = writeEverything(root, defaults, credentials);
            Map<String, String> expected = new TreeMap<>(UNCHANGEABLE);
            Map<String, String> actual = new TreeMap<>();
            for (String path : unchanged) actual.put(path, UNCHANGEABLE.getOrDefault(path, "(no candidate value was taken)"));
            assertEquals(expected, actual, "writable files left at their defaults");
            dumped = dump(root);
            saved = saveOf(server);
        }
        try (Server server = Server.start(new ObjectMapper().readTree(saved), dir)) {
            assertEquals(Map.of(), differences(dumped, dump(server.mounts())), "every file reads the same after save and restart");
            assertEquals(saved, saveOf(server));
        }
    }

    private String saveOf(Server server) throws Exception {
        ControlClient.Reply reply = ControlClient.connect(ControlEndpoint.hostPort(server.controlAddress()), null, dir, null).get("save", null);
        assertTrue(reply.ok(), reply.body());
        return reply.body();
    }

    /** Each path whose reading differs: before -> after. */
    private static Map<String, String> differences(Map<String, String> before, Map<String, String> after) {
        Map<String, String> out = new TreeMap<>();
        Set<String> paths = new LinkedHashSet<>(before.keySet());
        paths.addAll(after.keySet());
        for (String p : paths) {
            if (!java.util.Objects.equals(before.get(p), after.get(p))) out.put(p, before.get(p) + " -> " + after.get(p));
        }
        return out;
    }

    /** Every file of every mounted tree and what it reads (links as their targets), live files left out. */
    private static Map<String, String> dump(ConfigTree root) throws ControlException {
        Map<String, String> out = new LinkedHashMap<>();
        walk(root, "/", out);
        return out;
    }

    private static void walk(ConfigTree root, String dir, Map<String, String> out) throws ControlException {
        for (String entry : root.list(dir)) {
            String name = entry.endsWith("/") ? entry.substring(0, entry.length() - 1) : entry;
            String path = (dir.endsWith("/") ? dir : dir + "/") + name;
            switch (root.kind(path)) {
                case FILE -> {
                    if (!LIVE.contains(name)) out.put(path, root.read(path));
                }
                case LINKS -> out.put(path, String.join(",", root.list(path)));
                case DIRECTORY -> walk(root, path, out);
            }
        }
    }

    /**
     * Writes each file that still reads its default the first candidate it takes that changes
     * what it reads, pass after pass until a pass changes nothing (one write may allow another:
     * allow_any_client 0 before allowed_clients); the gates ({@code enable}, the descendant
     * limits) go last, as the loader writes them. Returns the writable files left unchanged.
     */
    private static Set<String> writeEverything(ConfigTree root, Map<String, String> defaults, Path credentials) throws ControlException {
        Set<String> writable = new LinkedHashSet<>();
        for (boolean gates : new boolean[] {false, true}) {
            boolean progress = true;
            while (progress) {
                progress = false;
                for (String path : dump(root).keySet()) {
                    String name = path.substring(path.lastIndexOf('/') + 1);
                    if (ConfigLoader.LAST.contains(name) != gates || root.kind(path) != ConfigTree.Kind.FILE
                        || path.startsWith(DEVICE_IN_USE)) {
                        continue;
                    }
                    String before = root.read(path);
                    if (!before.equals(defaults.get(path))) continue;
                    for (String value : candidates(root, before, credentials)) {
                        try {
                            root.write(path, value);
                        } catch (ControlException e) {
                            if (!e.getMessage().contains("read-only")) writable.add(path);
                            continue;
                        }
                        writable.add(path);
                        if (!root.read(path).equals(before)) {
                            progress = true;
                            break;
                        }
                    }
                }
            }
        }
        Set<String> unchanged = new LinkedHashSet<>();
        for (String path : writable) if (root.read(path).equals(defaults.get(path))) unchanged.add(path);
        return unchanged;
    }

    /**
     * Values to try on a file that reads {@code current}: the shapes the trees take, for the
     * device {@code disk}; names and paths first, which free-text files take as well.
     */
    private static List<String> candidates(ConfigTree root, String current, Path credentials) throws ControlException {
        String dev = root.read("/backends/disk/device").strip();
        String v = current.strip();
        List<String> c = new ArrayList<>(List.of("disk", "/tenants/a", credentials.toString(), credentials.resolve(PSK_FILE).toString(), "tcp"));
        if (v.matches("\\d+")) {
            long n = Long.parseLong(v);
            c.addAll(List.of(Long.toString(n * 2), Long.toString(n / 2), Long.toString(n + 1), Long.toString(n > 1 ? n - 1 : 2)));
        }
        c.addAll(List.of("1", "0", "y", "n", "max", "4096", "100", "2", "+io",
                "default 200", dev + " 300",
                dev + " rbps=1048576 wiops=100",
                dev + " enable=1 ctrl=user rpct=90.00 rlat=4000 wpct=90.00 wlat=4000 min=40.00 max=140.00",
                dev + " ctrl=user model=linear rbps=100000000 rseqiops=10000 rrandiops=5000 wbps=90000000 wseqiops=9000 wrandiops=4000",
                dev + " target=10000",
                "memory", "64M", "259:9", "tenant x's disk", "127.0.0.2", "4421", "ipv6", "tls1.3", "not required",
                "1.2", "serial-42", "model-42", "fw42", "-1", "8192", "64", "nqn.2026-11.io.iotarget:discovery-renamed",
                "0b6f8b4e-1c3d-4c5e-9f7a-2b3c4d5e6f70", "0102030405060708090a0b0c0d0e0f10", "hmac(sha512)", "ffdhe4096", KEY, TLS_KEY,
                "CN=client,O=tenant", "/srv/iotarget/disk.img", "inaccessible"));
        return c;
    }
}
