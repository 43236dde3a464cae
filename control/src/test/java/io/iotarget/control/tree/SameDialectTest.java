package io.iotarget.control.tree;

import io.iotarget.engine.Engine;
import io.iotarget.frontend.nbd.NbdServer;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The same attribute, spelled the same way, behaves the same in every tree: the flags of a
 * backend, an NBD export and an NVMe namespace, the cgroup/cgroup_id binding of an export and a
 * namespace, and paths and numbers as the cgroup tree reads them.
 */
class SameDialectTest {
    private static final String NAMESPACE = "/nvmet/subsystems/nqn.2026-11.io.iotarget:t/namespaces/1";
    private static final String EXPORT = "/nbd/exports/x";
    private static final String BACKEND = "/backends/m";
    /** Directories whose members have enable and readonly. */
    private static final List<String> FLAGGED = List.of(BACKEND, EXPORT, NAMESPACE);
    /** Directories bound to a group with cgroup and cgroup_id. */
    private static final List<String> BOUND = List.of(EXPORT, NAMESPACE);

    private final Engine engine = new Engine();
    private NbdServer nbd;
    private NvmeTarget nvme;
    private MountTable tree;
    private long groupId;

    @BeforeEach
    void mount() throws Exception {
        nbd = new NbdServer(engine);
        nvme = new NvmeTarget(engine);
        tree = new MountTable()
                .mount(MountTable.CGROUP, new CgroupTree(engine.controller()))
                .mount("backends", new BackendTree(engine))
                .mount("nbd", nbd.tree())
                .mount("nvmet", nvme.tree());
        tree.write("cgroup.subtree_control", "+io");
        tree.mkdir("a");
        groupId = engine.controller().group("a").id();
        for (String backend : List.of("d", "m")) {
            tree.mkdir("/backends/" + backend);
            tree.write("/backends/" + backend + "/type", "memory");
            tree.write("/backends/" + backend + "/size", "1M");
        }
        tree.write("/backends/d/enable", "1");
        tree.mkdir(EXPORT);
        tree.write(EXPORT + "/backend", "d");
        tree.mkdir("/nvmet/subsystems/nqn.2026-11.io.iotarget:t");
        tree.mkdir(NAMESPACE);
        tree.write(NAMESPACE + "/device_path", "d");
    }

    @AfterEach
    void close() throws Exception {
        nvme.close();
        nbd.close();
        engine.close();
    }

    @Test
    void shouldReadFlagsAsKstrtoboolEverywhere() throws Exception {
        for (String dir : FLAGGED) {
            for (String attribute : List.of("readonly", "enable")) {
                for (String on : List.of("1", "y", "Y", "t", "T", "on", "ON", "yes", "1\n")) {
                    tree.write(dir + "/" + attribute, on);
                    assertEquals("1\n", tree.read(dir + "/" + attribute), dir + "/" + attribute + "=" + on);
                    tree.write(dir + "/" + attribute, "0");
                }
                tree.write(dir + "/" + attribute, "1");
                for (String off : List.of("0", "n", "N", "f", "F", "off", "OFF", "no")) {
                    tree.write(dir + "/" + attribute, off);
                    assertEquals("0\n", tree.read(dir + "/" + attribute), dir + "/" + attribute + "=" + off);
                    tree.write(dir + "/" + attribute, "1");
                }
                tree.write(dir + "/" + attribute, "0");
                for (String bad : List.of("", "2", "-1", "o", "maybe")) {
                    refused(Errno.EINVAL, dir + "/" + attribute, bad, attribute + "=" + bad + " (expected: " + KernelParse.BOOLEAN + ")");
                }
            }
        }
    }

    @Test
    void shouldBindTheSameGroupForTheSameSpelling() throws Exception {
        String octal = "0" + Long.toOctalString(groupId);
        String hex = "0x" + Long.toHexString(groupId);
        for (String dir : BOUND) {
            assertEquals("0\n", tree.read(dir + "/cgroup_id"), dir + ": unbound by default");
            assertEquals("\n", tree.read(dir + "/cgroup"), dir);
            for (String id : List.of(Long.toString(groupId), "+" + groupId, octal, hex, " " + groupId + "\n")) {
                tree.write(dir + "/cgroup_id", id);
                assertEquals("/a\n", tree.read(dir + "/cgroup"), dir + "/cgroup_id=" + id);
                tree.write(dir + "/cgroup_id", "0");
                assertEquals("\n", tree.read(dir + "/cgroup"), dir + ": cgroup_id=0 unbinds");
                assertEquals("0\n", tree.read(dir + "/cgroup_id"), dir);
            }
            for (String path : List.of("a", "/a", "a/", "./a", "//a")) {
                tree.write(dir + "/cgroup", path);
                assertEquals(groupId + "\n", tree.read(dir + "/cgroup_id"), dir + "/cgroup=" + path);
                tree.write(dir + "/cgroup", "");
                assertEquals("0\n", tree.read(dir + "/cgroup_id"), dir + ": cgroup \"\" unbinds");
            }
            tree.write(dir + "/cgroup", "/");
            assertEquals("1\n", tree.read(dir + "/cgroup_id"), dir + ": the root bound by path");
            for (String bad : List.of("-1", "x1", "1x", "08", "")) {
                refused(Errno.EINVAL, dir + "/cgroup_id", bad, "cgroup_id=" + bad + " (expected: an unsigned number (0x.. hex, 0.. octal))");
            }
            refused(Errno.ENOENT, dir + "/cgroup_id", "999999", "cgroup_id=999999 (expected: the id of an existing group, 0 to unbind)");
            refused(Errno.ENOENT, dir + "/cgroup", "nosuch", "cgroup=nosuch (expected: the path of an existing group, \"\" to unbind): no group nosuch");
            refused(Errno.EINVAL, dir + "/cgroup", "a/../a", "cgroup=a/../a (expected: the path of an existing group, \"\" to unbind): "
                                                             + "'..' is not allowed in paths: a/../a");
        }
    }

    @Test
    void shouldChargeAnUnboundMemberToTheRootAndPinABoundGroup() throws Exception {
        for (String dir : BOUND) {
            tree.write(dir + "/cgroup_id", Long.toString(groupId));
            tree.write(dir + "/enable", "on");
            refused(Errno.EBUSY, dir + "/cgroup_id", "0", null);
            refused(Errno.EBUSY, dir + "/cgroup", "", null);
            assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> tree.rmdir("a")).errno(), dir + " pins its group");
            tree.write(dir + "/enable", "off");
            tree.write(dir + "/cgroup_id", "0");
        }
        tree.rmdir("a");
    }

    @Test
    void shouldReadNumbersAsKstrtou64Everywhere() throws Exception {
        for (String file : List.of(BACKEND + "/queue_depth", EXPORT + "/max_connections", "/nvmet/subsystems/nqn.2026-11.io.iotarget:t/attr_qid_max")) {
            for (String eight : List.of("8", "+8", "010", "0x8", " 8\n")) {
                tree.write(file, "1");
                tree.write(file, eight);
                assertEquals("8\n", tree.read(file), file + "=" + eight);
            }
            String attribute = file.substring(file.lastIndexOf('/') + 1);
            for (String bad : List.of("-8", "08", "8x", "")) {
                refused(Errno.EINVAL, file, bad, attribute + "=" + bad + " (expected: an unsigned number (0x.. hex, 0.. octal))");
            }
        }
    }

    @Test
    void shouldReadPathsAndNumbersAsTheCgroupTreeDoes() throws Exception {
        String controllers = tree.read("a/cgroup.controllers");
        for (String path : List.of("/cgroup/a/cgroup.controllers", "a//cgroup.controllers", "./a/cgroup.controllers")) {
            assertEquals(controllers, tree.read(path), path);
        }
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> tree.read("a/../a/cgroup.controllers")).errno());
        tree.write("a/cgroup.max.depth", "010");
        assertEquals("8\n", tree.read("a/cgroup.max.depth"), "octal, as cgroup_id=010 is group 8");
    }

    private void refused(Errno errno, String path, String value, String detail) {
        ControlException e = assertThrows(ControlException.class, () -> tree.write(path, value), path + "=" + value);
        assertEquals(errno, e.errno(), path + "=" + value + ": " + e.getMessage());
        if (detail != null) assertEquals(detail, e.detail(), path);
    }
}
