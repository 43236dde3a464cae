package io.iotarget.control.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.control.tree.MountTable;
import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The persisted view answers as the trees behind it do, io.pressure triggers included. */
class PersistedTreeTest {
    @TempDir
    Path dir;

    @Test
    void shouldKeepATriggerOnTheTreeBehind() throws Exception {
        try (Engine engine = new Engine()) {
            MountTable mounts = new MountTable().mount(MountTable.CGROUP, new CgroupTree(engine.controller()));
            ConfigTree cgroup = mounts.resolve("/" + MountTable.CGROUP).tree();
            ConfigLoader.Trees trees = section -> section.equals(MountTable.CGROUP) ? cgroup : null;
            var config = new ObjectMapper().readTree("{}");
            try (PersistedTree persisted = PersistedTree.open(dir.resolve("state.json"), mounts, new ConfigSaver(null, null, trees), config, trees)) {
                persisted.write("cgroup.subtree_control", "+io");
                persisted.mkdir("a");
                assertEquals(List.of("a/"), persisted.list("/cgroup").stream().filter(n -> n.endsWith("/")).toList());
                try (ConfigTree.Watch watch = persisted.watch("a/io.pressure", "some 150000 1000000")) {
                    assertNull(watch.await(1_000_000), "nothing held a: the trigger does not fire");
                }
            }
        }
    }
}
