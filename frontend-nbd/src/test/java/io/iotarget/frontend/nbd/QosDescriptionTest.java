package io.iotarget.frontend.nbd;

import io.iotarget.model.Device;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NBD's way to a tenant's own QoS (docs/qos-log.md): the export description, made for each
 * client, read by the tools an NBD user has — libnbd's {@code get_export_description} from
 * Python, and {@code nbdinfo} — against the server on loopback. The client's own group only:
 * under {@code cgroup_per_host}, the child its address pays in, not its neighbour's.
 */
class QosDescriptionTest {
    private static final String OWN = "tenants/shared/addr:127.0.0.1";
    private TestTarget target;
    private Device device;

    @BeforeEach
    void start() throws Exception {
        Tools.require("python3 with libnbd", "/usr/lib/python3/dist-packages/nbd.py");
        target = new TestTarget();
        device = target.memoryExport("shared", 16 << 20);
        var cg = target.engine.controller();
        cg.write("tenants/shared/cgroup.subtree_control", "+io");
        cg.write("tenants/shared/io.max.per_host", device.number() + " riops=100000 wbps=104857600");
        // A neighbour's group beside this client's, with a limit of its own that must not show.
        cg.mkdir("tenants/shared/addr:192.0.2.7");
        cg.write("tenants/shared/addr:192.0.2.7/io.max", device.number() + " wbps=7777777");
        target.server.tree().write("exports/shared/enable", "0");
        target.server.tree().write("exports/shared/description", "volume 7 of tenant shared");
        target.server.tree().write("exports/shared/cgroup_per_host", "1");
        target.server.tree().write("exports/shared/enable", "1");
    }

    @AfterEach
    void stop() {
        target.close();
    }

    /**
     * Writes 3 × 4 KiB and reads 2 × 4 KiB on one connection, then asks for the description on
     * a second one, as a host that runs a tool beside its mounted device does.
     */
    private static final String CLIENT = """
            import nbd, sys
            h = nbd.NBD()
            h.connect_uri(sys.argv[1])
            for i in range(3): h.pwrite(b'q' * 4096, i * 4096)
            for i in range(2): h.pread(4096, i * 4096)
            d = nbd.NBD()
            d.set_full_info(True)
            d.connect_uri(sys.argv[1])
            print(d.get_export_description())
            d.shutdown()
            h.shutdown()
            """;

    @Test
    void shouldDescribeTheClientsOwnGroupThroughLibnbd() throws Exception {
        String text = Tools.ok(60, "/usr/bin/python3", "-c", CLIENT, target.uri("shared")).strip();
        String dev = device.number().toString();
        String[] lines = text.split("\n");
        assertEquals("volume 7 of tenant shared", lines[0], "the operator's description first:\n" + text);
        assertTrue(lines[1].startsWith("iotarget.group /" + OWN + " device " + dev + " time_ms "), text);
        assertTrue(lines[1].endsWith("(this client's own, cgroup_per_host)"), text);
        assertTrue(text.contains("\nio.max " + dev + " rbps=max wbps=104857600 riops=100000 wiops=max\n"), text);
        assertTrue(text.contains("\nio.stat " + dev + " rbytes=8192 wbytes=12288 rios=2 wios=3 dbytes=0 dios=0"), text);
        assertTrue(text.contains("\nio.weight default 100"), text);
        assertTrue(text.contains("\niotarget.io.stat " + dev + " throttle_usec="), text);
        assertTrue(text.contains(" lat_ios=5 "), "every completion of the first connection:\n" + text);
        assertTrue(text.contains("\nio.pressure some avg10=") && text.contains("\nio.pressure full avg10="), text);
        assertFalse(text.contains("7777777") || text.contains("192.0.2.7"), "nothing of the neighbour's group:\n" + text);
        // Each line is the file's own line for the device, as the operator reads it.
        String ioStat = target.engine.controller().read(OWN + "/io.stat").strip();
        assertTrue(text.contains("\nio.stat " + ioStat), text + "\nvs io.stat " + ioStat);
    }

    @Test
    void shouldShowTheDescriptionInNbdinfo() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        // The client's group is made by its first transmission: a connection that does IO first.
        Tools.ok(60, "/usr/bin/python3", "-c", "import nbd, sys; h = nbd.NBD(); h.connect_uri(sys.argv[1]); h.pread(4096, 0); h.shutdown()",
                 target.uri("shared"));
        String info = Tools.ok(60, "nbdinfo", target.uri("shared"));
        assertTrue(info.contains("description: volume 7 of tenant shared"), info);
        assertTrue(info.contains("iotarget.group /" + OWN + " device "), info);
        assertTrue(info.contains("io.stat " + device.number() + " rbytes=4096 "), info);
    }

    @Test
    void shouldSayTheGroupIsNotMadeYetBeforeTheClientsFirstTransmission() throws Exception {
        String text = Tools.ok(60, "/usr/bin/python3", "-c",
                "import nbd, sys; d = nbd.NBD(); d.set_full_info(True); d.connect_uri(sys.argv[1]); print(d.get_export_description())",
                target.uri("shared")).strip();
        assertEquals("volume 7 of tenant shared\niotarget.group /" + OWN
                     + " (this client's own, cgroup_per_host: made when it first transmits; no values yet)", text);
    }

    @Test
    void shouldDescribeTheExportsGroupWithoutPerHostCharging() throws Exception {
        target.memoryExport("plain", 1 << 20);
        String text = Tools.ok(60, "/usr/bin/python3", "-c",
                "import nbd, sys; d = nbd.NBD(); d.set_full_info(True); d.connect_uri(sys.argv[1]); print(d.get_export_description())",
                target.uri("plain")).strip();
        assertTrue(text.startsWith("iotarget.group /tenants/plain device "), "no operator description: the QoS lines alone:\n" + text);
        assertFalse(text.contains("cgroup_per_host"), text);
        assertTrue(text.contains("\nio.weight default 100"), text);
    }
}
