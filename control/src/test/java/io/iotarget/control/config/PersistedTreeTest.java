package io.iotarget.control.config;

import io.iotarget.control.tree.CgroupTree;
import io.iotarget.control.tree.MountTable;
import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The persisted view answers as the trees behind it do, io.pressure triggers included. */
class PersistedTreeTest {
    @Test
    void shouldKeepATriggerOnTheTreeBehind() throws Exception {
        try (Engine engine = new Engine()) {
            MountTable mounts = new MountTable().mount(MountTable.CGROUP, new CgroupTree(engine.controller()));
            mounts.write("cgroup.subtree_control", "+io");
            mounts.mkdir("a");
            // No change is made here, so nothing is saved: no saver or state file is needed.
            PersistedTree persisted = new PersistedTree(mounts, null, null);
            assertEquals(List.of("a/"), persisted.list("/cgroup").stream().filter(n -> n.endsWith("/")).toList());
            try (ConfigTree.Watch watch = persisted.watch("a/io.pressure", "some 150000 1000000")) {
                assertNull(watch.await(1_000_000), "nothing held a: the trigger does not fire");
            }
        }
    }
}
