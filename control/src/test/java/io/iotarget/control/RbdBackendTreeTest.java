package io.iotarget.control;

import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.control.tree.BackendTree;
import io.iotarget.engine.Engine;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.testkit.CephCluster;
import io.iotarget.testkit.Prerequisites;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A type rbd backend as an operator configures it in backends/NAME, against a one-host Ceph. */
class RbdBackendTreeTest {
    @TempDir
    Path dir;

    @Test
    void anRbdBackendIsCreatedOpenedResizedAndRefusedWithTheReason() throws Exception {
        Prerequisites.require(RbdBackend.unavailable() == null, "librbd1 cannot be loaded: " + RbdBackend.unavailable());
        try (CephCluster ceph = CephCluster.start(dir.resolve("ceph")); Engine engine = new Engine()) {
            BackendTree tree = new BackendTree(engine);
            tree.mkdir("r");
            tree.write("r/type", "rbd");
            assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> tree.write("r/enable", "1")).errno(), "pool and image first");
            assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> tree.write("r/image", "a/b")).errno(), "'/' separates pool and image");
            assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> tree.write("r/conf", "ceph.conf")).errno(), "an absolute path");
            tree.write("r/pool", "rbd");
            tree.write("r/image", "vol");
            tree.write("r/conf", ceph.conf().toString());
            ControlException missing = assertThrows(ControlException.class, () -> tree.write("r/enable", "1"));
            assertEquals(Errno.ENOENT, missing.errno());
            assertTrue(missing.getMessage().contains("create=1"), missing.getMessage());
            tree.write("r/create", "1");
            tree.write("r/size", "8M");
            tree.write("r/enable", "1");
            assertEquals("8388608\n", tree.read("r/size"));
            assertTrue(ceph.rbd("info", "rbd/vol").contains("size 8 MiB"));
            ceph.rbd("resize", "--size", "16M", "rbd/vol");
            tree.write("r/revalidate_size", "1");
            assertEquals("16777216\n", tree.read("r/size"));
            tree.write("r/enable", "0");
            tree.write("r/id", "nobody");
            assertEquals(Errno.EIO, assertThrows(ControlException.class, () -> tree.write("r/enable", "1")).errno(), "client.nobody has no key");
        }
    }
}
