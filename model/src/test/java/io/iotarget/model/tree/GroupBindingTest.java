package io.iotarget.model.tree;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.IoGroup;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** cgroup_id and cgroup: two spellings of one binding, alike for NBD exports and NVMe namespaces. */
class GroupBindingTest {
    private record Group(long id, String path) implements IoGroup {
    }

    private static final Group ROOT = new Group(1, "/");
    private static final Group A = new Group(7, "/tenants/a");
    private static final Map<String, Group> BY_PATH = Map.of("/", ROOT, "tenants/a", A, "/tenants/a", A);

    private static final GroupBinding.Groups<Group> GROUPS = new GroupBinding.Groups<>() {
        @Override
        public Group byId(long id) {
            return id == ROOT.id ? ROOT : id == A.id ? A : null;
        }

        @Override
        public Group byPath(String path) throws ControlException {
            if (path.contains("..")) throw new ControlException(Errno.EINVAL, "'..' is not allowed in paths: " + path);
            Group g = BY_PATH.get(path);
            if (g == null) throw new ControlException(Errno.ENOENT, "no group " + path);
            return g;
        }
    };

    /** An export: its bound group, whether it is enabled, and the binder's calls. */
    private static final class Member {
        Group group;
        boolean enabled;
        final List<String> binds = new ArrayList<>();
    }

    private static final GroupBinding.Binder<Member, Group> BINDER = (m, g, write) -> {
        if (m.enabled) throw new ControlException(Errno.EBUSY, write + ": fixed while enabled");
        m.binds.add(write);
        m.group = g;
    };

    private final Attribute<Member> cgroupId = GroupBinding.cgroupId(GROUPS, m -> m.group, BINDER);
    private final Attribute<Member> cgroup = GroupBinding.cgroup(GROUPS, m -> m.group, BINDER);

    @Test
    void shouldReadUnboundAsZeroAndEmptyAndBindEitherWay() throws ControlException {
        Member m = new Member();
        assertEquals("0\n", cgroupId.read(m));
        assertEquals("\n", cgroup.read(m));
        cgroupId.write(m, "0x7\n");
        assertSame(A, m.group, "kstrtou64 base 0");
        assertEquals("/tenants/a\n", cgroup.read(m), "either attribute reads the one binding");
        cgroup.write(m, " /\n");
        assertSame(ROOT, m.group, "the root itself, stripped");
        assertEquals("1\n", cgroupId.read(m));
        cgroupId.write(m, "0");
        assertNull(m.group, "0 unbinds");
        cgroup.write(m, "tenants/a");
        cgroup.write(m, "");
        assertNull(m.group, "\"\" unbinds");
        assertEquals(List.of("cgroup_id=7", "cgroup=/", "cgroup_id=0", "cgroup=tenants/a", "cgroup="), m.binds, "the binder hears which write");
    }

    @Test
    void shouldSaveThePathOnlyForIdsChangeAcrossRestarts() throws ControlException {
        Member m = new Member();
        assertEquals(List.of(), cgroup.replay(m));
        cgroupId.write(m, "7");
        assertEquals(List.of(), cgroupId.replay(m));
        assertEquals(List.of("/tenants/a"), cgroup.replay(m));
    }

    @Test
    void shouldRefuseWhatNamesNoGroupAndChangeNothing() throws ControlException {
        Member m = new Member();
        cgroup.write(m, "/tenants/a");
        ControlException e = assertThrows(ControlException.class, () -> cgroupId.write(m, "8"));
        assertEquals(Errno.ENOENT, e.errno());
        assertEquals("cgroup_id=8 (expected: the id of an existing group, 0 to unbind)", e.detail());
        e = assertThrows(ControlException.class, () -> cgroupId.write(m, "a"));
        assertEquals(Errno.EINVAL, e.errno());
        e = assertThrows(ControlException.class, () -> cgroup.write(m, "tenants/b"));
        assertEquals(Errno.ENOENT, e.errno());
        assertEquals("cgroup=tenants/b (expected: the path of an existing group, \"\" to unbind): no group tenants/b", e.detail());
        e = assertThrows(ControlException.class, () -> cgroup.write(m, "../x"));
        assertEquals(Errno.EINVAL, e.errno(), "the lookup's errno is kept");
        m.enabled = true;
        e = assertThrows(ControlException.class, () -> cgroup.write(m, "/"));
        assertEquals(Errno.EBUSY, e.errno(), "the owner may refuse");
        assertEquals("cgroup=/: fixed while enabled", e.detail());
        assertSame(A, m.group, "nothing changed");
        assertEquals(List.of("cgroup=/tenants/a"), m.binds);
    }
}
