package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code bin/iotarget save}: a target configured through the CLI is saved, a new server is
 * started from the saved file, and it saves to the same bytes and behaves the same — its
 * limits read the same through the CLI and its export serves the data written before.
 */
class SaveRestoreTest {
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
    private static final String KEY = "DHHC-1:01:FZutw06N2trA/TvbhG4i6jXua32pSJce08/ZmPlk0jMEPvkB:";
    private static final String NQN = "nqn.2026-11.io.iotarget:saved";

    @TempDir
    Path dir;
    private Server server;
    private String control;

    @AfterEach
    void stop() {
        if (server != null) server.close();
    }

    private void start(String config) throws Exception {
        server = Server.start(new ObjectMapper().readTree(config), dir);
        control = ControlEndpoint.hostPort(server.controlAddress());
    }

    private void restart(String config) throws Exception {
        server.close();
        server = null;
        start(config);
    }

    private record Result(int code, String out, String err) {
    }

    private Result cli(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] full = new String[args.length + 2];
        full[0] = "--control";
        full[1] = control;
        System.arraycopy(args, 0, full, 2, args.length);
        int code = Main.run(full, Map.of("IOTARGET_RUNTIME_DIR", dir.toString()), new PrintStream(out, true, StandardCharsets.UTF_8),
                            new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private String ok(String... args) {
        Result r = cli(args);
        assertEquals(0, r.code, String.join(" ", args) + ": " + r.err);
        return r.out;
    }

    @Test
    void shouldSaveWhatTheCliMadeAndComeBackTheSame() throws Exception {
        Tools.require("qemu-io", "/usr/bin/qemu-io");
        start("""
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" } }
                """);
        Path image = dir.resolve("disk.img");
        for (String[] op : new String[][] {
                {"mkdir", "/backends/disk"}, {"write", "/backends/disk/type", "file"}, {"write", "/backends/disk/path", image.toString()},
                {"write", "/backends/disk/create", "1"}, {"write", "/backends/disk/size", "16M"}, {"write", "/backends/disk/device", "259:3"},
                {"write", "/backends/disk/enable", "1"},
                {"mkdir", "/backends/fast"}, {"write", "/backends/fast/type", "null"}, {"write", "/backends/fast/size", "1G"},
                {"write", "/backends/fast/enable", "y"},
                {"write", "cgroup.subtree_control", "+io"},
                {"write", "io.cost.qos", "disk enable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=50 max=150"},
                {"write", "io.cost.model", "disk ctrl=user model=linear rbps=100000000 rseqiops=10000 rrandiops=5000 wbps=90000000 wseqiops=9000 wrandiops=4000"},
                {"mkdir", "tenants"}, {"write", "tenants/cgroup.subtree_control", "+io"}, {"write", "tenants/cgroup.max.descendants", "2"},
                {"mkdir", "tenants/a"}, {"mkdir", "tenants/b"},
                {"write", "tenants/a/io.max", "259:3 riops=20000 wbps=104857600"}, {"write", "tenants/a/io.max", "fast rbps=1048576"},
                {"write", "tenants/a/io.max.burst", "259:3 riops=40000 len=3"},
                {"write", "tenants/a/io.weight", "default 200"}, {"write", "tenants/b/io.weight", "259:3 50"},
                {"mkdir", "/nbd/exports/a"}, {"write", "/nbd/exports/a/backend", "disk"}, {"write", "/nbd/exports/a/cgroup", "tenants/a"},
                {"write", "/nbd/exports/a/description", "tenant a's disk"}, {"write", "/nbd/exports/a/max_connections", "4"},
                {"write", "/nbd/exports/a/enable", "1"},
                {"mkdir", "/nvmet/hosts/" + HOST}, {"write", "/nvmet/hosts/" + HOST + "/dhchap_key", KEY},
                {"mkdir", "/nvmet/subsystems/" + NQN}, {"write", "/nvmet/subsystems/" + NQN + "/attr_allow_any_host", "0"},
                {"ln", "/nvmet/hosts/" + HOST, "/nvmet/subsystems/" + NQN + "/allowed_hosts/" + HOST},
                {"mkdir", "/nvmet/subsystems/" + NQN + "/namespaces/7"}, {"write", "/nvmet/subsystems/" + NQN + "/namespaces/7/device_path", "fast"},
                {"write", "/nvmet/subsystems/" + NQN + "/namespaces/7/cgroup", "tenants/b"},
                {"write", "/nvmet/subsystems/" + NQN + "/namespaces/7/enable", "1"},
                {"mkdir", "/nvmet/ports/2"}, {"write", "/nvmet/ports/2/addr_trtype", "tcp"}, {"write", "/nvmet/ports/2/addr_adrfam", "ipv4"},
                {"write", "/nvmet/ports/2/addr_traddr", "127.0.0.1"}, {"write", "/nvmet/ports/2/addr_trsvcid", "0"},
                {"ln", "/nvmet/subsystems/" + NQN, "/nvmet/ports/2/subsystems/" + NQN}}) {
            ok(op);
        }
        String uri = "nbd://" + ControlEndpoint.hostPort(server.nbdAddresses().getFirst()) + "/a";
        Tools.ok(60, "qemu-io", "-f", "raw", "-c", "write -P 0x5a 1M 64k", uri);

        String saved = ok("save");
        Path file = dir.resolve("saved.json");
        ok("save", file.toString());
        assertEquals(saved, Files.readString(file), "save FILE writes what save prints");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)), "it holds the DH-HMAC-CHAP key");
        assertTrue(saved.contains(KEY), "secrets are saved as they were configured");
        assertTrue(saved.contains("\"io.max\" : [ \"259:3 rbps=max wbps=104857600 riops=20000 wiops=max\""), saved);
        assertTrue(saved.contains("\"cgroup.subtree_control\" : \"+io\""), saved);
        assertTrue(!saved.contains("cgroup_id"), "the binding is saved by path: ids are not stable across restarts");
        assertTrue(saved.contains("\"io.max.burst\" : \"259:3 rbps=max wbps=max riops=40000 wiops=max len=3\""), saved);
        String ioMax = ok("read", "tenants/a/io.max");
        String burst = ok("read", "tenants/a/io.max.burst");
        String qos = ok("read", "io.cost.qos");

        restart(saved);
        assertEquals(saved, ok("save"), "save -> restart -> save is identical");
        assertEquals(ioMax, ok("read", "tenants/a/io.max"));
        assertEquals(burst, ok("read", "tenants/a/io.max.burst"));
        assertEquals(qos, ok("read", "io.cost.qos"));
        assertEquals("/tenants/a\n", ok("read", "/nbd/exports/a/cgroup"));
        assertEquals(HOST + "\n", ok("ls", "/nvmet/subsystems/" + NQN + "/allowed_hosts"));
        assertEquals("1\n", ok("read", "/nvmet/subsystems/" + NQN + "/namespaces/7/enable"));
        assertEquals("2\n", ok("read", "tenants/cgroup.max.descendants"));
        String uri2 = "nbd://" + ControlEndpoint.hostPort(server.nbdAddresses().getFirst()) + "/a";
        Tools.ok(60, "qemu-io", "-f", "raw", "-c", "read -P 0x5a 1M 64k", uri2);
        Tools.ok(60, "qemu-io", "-f", "raw", "-c", "write -P 0x33 0 4k", uri2);
        String stat = ok("read", "tenants/a/io.stat");
        assertTrue(stat.startsWith("259:3 rbytes=65536 wbytes=4096 rios=1 "), "IO through the restored export is charged to its group: " + stat);
    }
}
