package io.iotarget.frontend.nbd;

import io.iotarget.backend.MemoryBackend;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The exports tree as the control plane drives it: attributes, bindings and errors. */
class ExportTreeTest {
    private Engine engine;
    private NbdServer server;
    private ConfigTree tree;
    private Device device;
    private Group tenant;

    @BeforeEach
    void start() throws Exception {
        engine = new Engine();
        server = new NbdServer(engine);
        tree = server.tree();
        device = engine.addDevice("default", new MemoryBackend(1 << 20, 512, false), null, 16);
        engine.controller().write("cgroup.subtree_control", "+io");
        tenant = engine.controller().mkdir("tenant");
        tree.mkdir("exports/default");
    }

    @AfterEach
    void stop() {
        server.close();
        engine.close();
    }

    private static void assertErrno(Errno errno, org.junit.jupiter.api.function.Executable call, String detailPart) {
        ControlException e = assertThrows(ControlException.class, call);
        assertEquals(errno, e.errno(), e.getMessage());
        assertTrue(e.detail().contains(detailPart), e.detail());
    }

    @Test
    void shouldListAndReadDefaults() throws Exception {
        assertEquals(List.of("exports/"), tree.list(""));
        assertEquals(List.of("default/"), tree.list("exports"));
        assertEquals(List.of("backend", "cgroup", "cgroup_id", "description", "enable", "max_connections", "readonly"), tree.list("exports/default"));
        assertEquals(ConfigTree.Kind.FILE, tree.kind("exports/default/enable"));
        assertEquals("/\n", tree.read("exports/default/cgroup"));
        assertEquals("1\n", tree.read("exports/default/cgroup_id"));
        assertEquals("0\n", tree.read("exports/default/enable"));
        assertEquals("\n", tree.read("exports/default/backend"));
    }

    @Test
    void shouldKeepCgroupAndCgroupIdInStep() throws Exception {
        tree.write("exports/default/cgroup_id", tenant.id() + "\n");
        assertEquals("/tenant\n", tree.read("exports/default/cgroup"));
        tree.write("exports/default/cgroup", "/");
        assertEquals("1\n", tree.read("exports/default/cgroup_id"));
        tree.write("exports/default/cgroup", "tenant");
        assertEquals(tenant.id() + "\n", tree.read("exports/default/cgroup_id"));
    }

    @Test
    void shouldRefuseBadValuesNamingAttributeValueAndExpectation() {
        assertErrno(Errno.ENODEV, () -> tree.write("exports/default/backend", "nope"), "backend=nope (expected: an engine device name; have default)");
        assertErrno(Errno.ENOENT, () -> tree.write("exports/default/cgroup", "missing"), "cgroup=missing");
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/cgroup_id", "x1"), "cgroup_id=x1 (expected: a decimal group id");
        assertErrno(Errno.ENOENT, () -> tree.write("exports/default/cgroup_id", "999"), "cgroup_id=999");
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/readonly", "yes"), "readonly=yes (expected: 0 or 1)");
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/enable", "1"), "backend is not set");
        assertErrno(Errno.ENOENT, () -> tree.write("exports/default/size", "1"), "exports/default/size");
        assertErrno(Errno.EEXIST, () -> tree.mkdir("exports/default"), "exists");
        assertErrno(Errno.EPERM, () -> tree.mkdir("other"), "expected: exports/<name>");
        assertErrno(Errno.EISDIR, () -> tree.read("exports/default"), "is a directory");
    }

    @Test
    void shouldHoldDeviceAndGroupWhileEnabledAndRefuseChangesWithEbusy() throws Exception {
        tree.write("exports/default/backend", "default");
        tree.write("exports/default/cgroup", "tenant");
        tree.write("exports/default/enable", "1");
        assertEquals("1\n", tree.read("exports/default/enable"));
        assertEquals(1, engine.users(device));
        assertErrno(Errno.EBUSY, () -> engine.controller().rmdir("tenant"), "bound");
        assertErrno(Errno.EBUSY, () -> engine.removeDevice(device), "used by");
        assertErrno(Errno.EBUSY, () -> tree.write("exports/default/backend", "default"), "export is enabled");
        assertErrno(Errno.EBUSY, () -> tree.write("exports/default/cgroup", "/"), "export is enabled");
        assertErrno(Errno.EBUSY, () -> tree.write("exports/default/cgroup_id", "1"), "export is enabled");
        assertErrno(Errno.EBUSY, () -> tree.write("exports/default/readonly", "1"), "export is enabled");
        tree.write("exports/default/description", "changeable any time");
        assertEquals("changeable any time", server.exports().find("").description());
        tree.write("exports/default/enable", "0");
        assertEquals(0, engine.users(device));
        tree.write("exports/default/enable", "1");
        tree.rmdir("exports/default");                  // removing an enabled export disables it first
        assertEquals(0, engine.users(device));
        engine.controller().rmdir("tenant");
        assertEquals(List.of(), tree.list("exports"));
    }
}
