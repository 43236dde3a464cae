package io.iotarget.frontend.nbd;

import io.iotarget.backend.Backend;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.engine.Engine;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;

/**
 * An engine and an NBD server on a free loopback port, for tests. Groups live under
 * "tenants" with io enabled; exports are added with {@link #export}.
 */
final class TestTarget implements AutoCloseable {
    final Engine engine;
    final NbdServer server;
    final int port;

    TestTarget() throws IOException, ControlException {
        this(Engine.Settings.defaults());
    }

    TestTarget(Engine.Settings settings) throws IOException, ControlException {
        engine = new Engine(io.iotarget.model.Clock.SYSTEM, true, settings);
        server = new NbdServer(engine);
        server.listen(new InetSocketAddress("127.0.0.1", 0));
        port = server.localAddresses().getFirst().getPort();
        engine.controller().write("cgroup.subtree_control", "+io");
        engine.controller().mkdir("tenants");
        engine.controller().write("tenants/cgroup.subtree_control", "+io");
    }

    /** A memory device of {@code sizeBytes} exported as {@code name}, charged to tenants/{@code name}. */
    Device memoryExport(String name, long sizeBytes) throws ControlException {
        return export(name, new MemoryBackend(sizeBytes, 512, false), false);
    }

    Device export(String name, Backend backend, boolean readOnly) throws ControlException {
        Device device = engine.addDevice(name, backend, null, Engine.DEFAULT_QUEUE_DEPTH);
        engine.controller().mkdir("tenants/" + name);
        server.tree().mkdir("exports/" + name);
        server.tree().write("exports/" + name + "/backend", name);
        server.tree().write("exports/" + name + "/cgroup", "tenants/" + name);
        server.tree().write("exports/" + name + "/readonly", readOnly ? "1" : "0");
        server.tree().write("exports/" + name + "/enable", "1");
        return device;
    }

    String uri(String export) {
        return "nbd://127.0.0.1:" + port + "/" + export;
    }

    /** The group's io.stat line for the device, as numbers: rbytes wbytes rios wios dbytes dios (zeros when absent). */
    Map<String, Long> ioStat(String group, Device device) throws ControlException {
        Map<String, Long> stat = new HashMap<>();
        for (String key : new String[]{"rbytes", "wbytes", "rios", "wios", "dbytes", "dios"}) stat.put(key, 0L);
        for (String line : engine.controller().read(group + "/io.stat").split("\n")) {
            String[] parts = line.trim().split(" ");
            if (!parts[0].equals(device.number().toString())) continue;
            for (int i = 1; i < parts.length; i++) {
                String[] kv = parts[i].split("=");
                stat.put(kv[0], Long.parseLong(kv[1]));
            }
        }
        return stat;
    }

    /** {@code after - before} per key. */
    static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> d = new HashMap<>();
        for (var e : after.entrySet()) d.put(e.getKey(), e.getValue() - before.getOrDefault(e.getKey(), 0L));
        return d;
    }

    static Map<String, Long> stat(long rbytes, long wbytes, long rios, long wios, long dbytes, long dios) {
        return Map.of("rbytes", rbytes, "wbytes", wbytes, "rios", rios, "wios", wios, "dbytes", dbytes, "dios", dios);
    }

    @Override
    public void close() {
        server.close();
        engine.close();
    }
}
