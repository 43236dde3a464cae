package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.testkit.GuestVm;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The main job as README command 1 starts it — the embedded default config — judged by real
 * clients: nbdinfo on the host, and in a Linux guest the kernel's NVMe/TCP host and NBD client
 * reaching the same backend. Only the ports differ from the defaults, so the test never
 * collides with a server a developer left running.
 */
class MainJobTest {
    private Server server;
    private int nvmePort;
    private int nbdPort;
    @TempDir
    Path tokens;

    @BeforeEach
    void start() throws Exception {
        JsonNode config = Server.defaultConfig();
        nvmePort = freePort();
        ((ObjectNode) config.get("server")).put("control", "127.0.0.1:0").put("nbd", "127.0.0.1:0");
        ((ObjectNode) config.at("/nvmet/ports/1")).put("addr_trsvcid", Integer.toString(nvmePort));
        server = Server.start(config, tokens);
        nbdPort = server.nbdAddresses().getFirst().getPort();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    @Test
    void shouldServeTheDefaultExportOverNbd() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        String info = Tools.ok(60, "nbdinfo", "nbd://127.0.0.1:" + nbdPort + "/default");
        assertTrue(info.contains("export-size: 1073741824"), info);
        assertTrue(info.contains("description: iotarget default memory export"), info);
        assertEquals("1\n", server.mounts().read("/nvmet/subsystems/nqn.2026-11.io.iotarget:default/namespaces/1/enable"));
        assertTrue(server.summary().contains("NVMe/TCP on 127.0.0.1:" + nvmePort + " (nqn.2026-11.io.iotarget:default)"), server.summary().toString());
    }

    @Test
    void shouldServeOneBackendToTheKernelsNvmeAndNbdClients() throws Exception {
        GuestVm.require();
        GuestVm.Result r = GuestVm.run(GuestVm.script("main-job.sh"),
                Map.of("NVME_PORT", Integer.toString(nvmePort), "NBD_PORT", Integer.toString(nbdPort)), List.of(), 300);
        assertEquals(0, r.exitCode(), r.text());
        assertEquals(List.of("CHECK discover ok", "CHECK nvme-readback ok", "CHECK nbd-sees-nvme-write ok"), r.lines("CHECK"));
        String stat = server.mounts().read("io.stat");
        long wbytes = Long.parseLong(stat.replaceAll("(?s).*wbytes=(\\d+).*", "$1"));
        assertTrue(wbytes >= 4 << 20, "the root group saw the 4 MiB written: " + stat);
    }
}
