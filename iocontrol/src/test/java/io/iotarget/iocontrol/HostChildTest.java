package io.iotarget.iocontrol;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * cgroup_per_host's groups: {@link GroupTree#bindHostChild} names, makes, seeds and binds a
 * host's child; io.max.per_host reads and writes as io.max does and carries a change over to
 * the children that still hold the old value.
 */
class HostChildTest {
    private static final String NQN = "nqn.2014-08.org.nvmexpress:uuid:0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f";

    private final ControllerHarness h = new ControllerHarness();
    private final IoController c = h.controller;

    @Test
    void namesKeepNqnsAddressesAndFingerprintsAndEscapeTheRest() {
        assertEquals(NQN, HostGroupName.of(NQN));
        assertEquals("192.0.2.7", HostGroupName.of("192.0.2.7"));
        assertEquals("fe80::1+25eth0", HostGroupName.of("fe80::1%eth0"));
        assertEquals("AB:CD:EF", HostGroupName.of("AB:CD:EF"));
        assertEquals("client+20one", HostGroupName.of("client one"));
        assertEquals("a+2Fb", HostGroupName.of("a/b"));
        assertEquals("a+2Bb", HostGroupName.of("a+b"), "'+' is the escape, so it is escaped itself");
        assertEquals("+2E.", HostGroupName.of(".."), "only the leading dot");
        assertEquals("+2Ehidden", HostGroupName.of(".hidden"));
        assertEquals("caf+C3+A9", HostGroupName.of("café"), "each UTF-8 byte");
    }

    @Test
    void firstConnectMakesTheChildWithIoEnabledAndThePerHostLimitAndBindsIt() throws Exception {
        c.mkdir("tenants");
        c.mkdir("tenants/a");
        Group a = c.group("tenants/a");
        c.write("tenants/cgroup.subtree_control", "+io");
        c.write("tenants/a/io.max.per_host", "259:0 riops=1000 wbps=1048576");
        assertEquals("259:0 rbps=max wbps=1048576 riops=1000 wiops=max\n", c.read("tenants/a/io.max.per_host"));
        assertEquals("", c.read("tenants/a/cgroup.subtree_control"), "io is enabled below a as the first host needs it");

        Group child = c.tree().bindHostChild(a, NQN);
        assertEquals("/tenants/a/" + NQN, child.path());
        assertEquals("io\n", c.read("tenants/a/cgroup.subtree_control"));
        assertEquals("259:0 rbps=max wbps=1048576 riops=1000 wiops=max\n", c.read("tenants/a/" + NQN + "/io.max"));
        ControlException busy = assertThrows(ControlException.class, () -> c.rmdir("tenants/a/" + NQN));
        assertEquals(Errno.EBUSY, busy.errno());
        assertEquals("automatic 1\n", c.read("tenants/a/" + NQN + "/iotarget.host"), "made by the connect, used by nobody");
        assertEquals(Errno.ENOENT, assertThrows(ControlException.class, () -> c.read("tenants/a/iotarget.host")).errno(), "no host's group");

        assertSame(child, c.tree().bindHostChild(a, NQN), "a second connection of the host shares its child");
        c.write("tenants/a/" + NQN + "/io.max", "259:0 riops=50");
        assertEquals("automatic 0\n", c.read("tenants/a/" + NQN + "/iotarget.host"), "written to: the operator's");
        c.unbind(child);
        assertThrows(ControlException.class, () -> c.rmdir("tenants/a/" + NQN), "one connection still uses it");
        c.unbind(child);
        assertSame(child, c.tree().bindHostChild(a, NQN));
        assertEquals("259:0 rbps=max wbps=1048576 riops=50 wiops=max\n", c.read("tenants/a/" + NQN + "/io.max"),
                     "a limit written to the child sticks across reconnects");
        c.unbind(child);
        c.rmdir("tenants/a/" + NQN);                    // idle: an ordinary group
    }

    @Test
    void anExistingChildOfThatNameIsUsedAsItIs() throws Exception {
        Group a = h.group("tenants/a");
        c.write("tenants/a/io.max.per_host", "259:0 riops=1000");
        c.write("tenants/a/cgroup.subtree_control", "+io");
        Group made = c.mkdir("tenants/a/192.0.2.7");
        c.write("tenants/a/192.0.2.7/io.max", "259:0 riops=5000");
        assertSame(made, c.tree().bindHostChild(a, "192.0.2.7"));
        assertEquals("259:0 rbps=max wbps=max riops=5000 wiops=max\n", c.read("tenants/a/192.0.2.7/io.max"));
    }

    @Test
    void aNameNoChildMayTakeIsRefusedWithMkdirsErrnos() throws Exception {
        Group a = h.group("tenants/a");
        ControlException file = assertThrows(ControlException.class, () -> c.tree().bindHostChild(a, "io.max"));
        assertEquals(Errno.EEXIST, file.errno());
        ControlException tooLong = assertThrows(ControlException.class, () -> c.tree().bindHostChild(a, "x".repeat(256)));
        assertEquals(Errno.ENAMETOOLONG, tooLong.errno());
        c.write("tenants/a/cgroup.max.descendants", "1");
        c.tree().bindHostChild(a, "one");
        ControlException full = assertThrows(ControlException.class, () -> c.tree().bindHostChild(a, "two"));
        assertEquals(Errno.EAGAIN, full.errno(), "cgroup.max.descendants caps how many hosts get a group");
    }

    /**
     * Hosts that came and went must not lock later ones out: at cgroup.max.descendants (of the
     * group or an ancestor) the group idle longest of those connects made and nobody used goes
     * to make room; connected hosts' groups and the operator's stay, and with only those the
     * new host is refused.
     */
    @Test
    void atMaxDescendantsAnIdleAutomaticGroupMakesRoomForANewHost() throws Exception {
        Group a = h.group("tenants/a");
        Group b = h.group("tenants/b");
        c.write("tenants/cgroup.max.descendants", "6");            // a, b and four more
        Group connected = c.tree().bindHostChild(a, "connected");
        c.mkdir("tenants/a/operators");
        c.unbind(c.tree().bindHostChild(b, "gone-first"));
        c.unbind(c.tree().bindHostChild(a, "gone-second"));
        assertEquals(0, c.tree().hostChildrenRemoved());

        c.unbind(c.tree().bindHostChild(a, "new-1"));
        assertFalse(c.list("tenants/b").contains("gone-first/"), "idle longest, under the same limit: removed");
        assertTrue(c.list("tenants/a").contains("gone-second/"));
        assertEquals(1, c.tree().hostChildrenRemoved());
        c.tree().bindHostChild(a, "new-2");
        assertFalse(c.list("tenants/a").contains("gone-second/"));
        c.tree().bindHostChild(a, "new-3");
        assertFalse(c.list("tenants/a").contains("new-1/"));
        assertEquals(3, c.tree().hostChildrenRemoved());

        ControlException full = assertThrows(ControlException.class, () -> c.tree().bindHostChild(b, "one-too-many"));
        assertEquals(Errno.EAGAIN, full.errno(), "only connected hosts' groups and the operator's left");
        assertTrue(connected.online());
        assertTrue(c.list("tenants/a").contains("operators/"));
        assertEquals(3, c.tree().hostChildrenRemoved());
    }

    /**
     * A host cycling through identities: past {@link GroupTree#IDLE_HOST_CHILDREN_KEPT} idle
     * automatic children, the one idle longest goes; a connected host's child and children the
     * operator used stay, however many identities come and go.
     */
    @Test
    void idleAutomaticChildrenBeyondTheBoundGoOldestFirst() throws Exception {
        Group a = h.group("tenants/a");
        Group connected = c.tree().bindHostChild(a, "connected");
        Group used = c.tree().bindHostChild(a, "used");
        c.write("tenants/a/used/io.max", "259:0 riops=300");
        c.unbind(used);
        assertTrue(connected.automatic());
        assertFalse(used.automatic(), "written to: the operator's");
        int kept = GroupTree.IDLE_HOST_CHILDREN_KEPT;
        for (int i = 0; i < kept; i++) c.unbind(c.tree().bindHostChild(a, "h" + i));
        assertEquals(kept + 2, a.children().size(), "up to the bound, every idle one stays");
        for (int i = kept; i < 3 * kept; i++) c.unbind(c.tree().bindHostChild(a, "h" + i));
        assertEquals(kept + 2, a.children().size());
        assertSame(connected, c.group("tenants/a/connected"));
        assertSame(used, c.group("tenants/a/used"));
        assertFalse(c.list("tenants/a").contains("h" + (2 * kept - 1) + "/"), "the oldest idle went");
        assertTrue(c.list("tenants/a").contains("h" + (2 * kept) + "/"));
        c.unbind(c.tree().bindHostChild(a, "h" + (2 * kept)));      // back again: now the newest idle
        c.unbind(c.tree().bindHostChild(a, "new"));
        assertTrue(c.list("tenants/a").contains("h" + (2 * kept) + "/"));
        assertFalse(c.list("tenants/a").contains("h" + (2 * kept + 1) + "/"));
        assertTrue(connected.online(), "connected: never removed");
    }

    @Test
    void perHostTakesIoMaxsSyntaxAndErrors() throws Exception {
        h.group("tenants/a");
        for (String bad : new String[] {"259:0 riops=0", "259:0 riops=1", "259:0 foo=5", "259:0 riops", "nodev riops=5", "9:9 riops=5"}) {
            ControlException perHost = assertThrows(ControlException.class, () -> c.write("tenants/a/io.max.per_host", bad));
            ControlException max = assertThrows(ControlException.class, () -> c.write("tenants/a/io.max", bad));
            assertEquals(max.errno(), perHost.errno(), bad);
        }
        assertEquals("", c.read("tenants/a/io.max.per_host"));
        c.write("io.max.per_host", "259:1 rbps=2000000");
        assertEquals("259:1 rbps=2000000 wbps=max riops=max wiops=max\n", c.read("io.max.per_host"), "the root has it too");
        c.write("io.max.per_host", "259:1 rbps=max");
        assertEquals("", c.read("io.max.per_host"));
    }

    @Test
    void aWriteMovesTheChildrenThatStillHoldThePreviousValue() throws Exception {
        Group a = h.group("tenants/a");
        c.write("tenants/a/io.max.per_host", "259:0 riops=1000");
        c.tree().bindHostChild(a, "h1");
        c.tree().bindHostChild(a, "h2");
        c.write("tenants/a/h2/io.max", "259:0 riops=300");      // changed by hand: keeps its own
        c.write("tenants/a/io.max.per_host", "259:0 riops=2000");
        assertEquals("259:0 rbps=max wbps=max riops=2000 wiops=max\n", c.read("tenants/a/h1/io.max"));
        assertEquals("259:0 rbps=max wbps=max riops=300 wiops=max\n", c.read("tenants/a/h2/io.max"));
        c.write("tenants/a/io.max.per_host", "259:0 riops=max");
        assertEquals("", c.read("tenants/a/h1/io.max"), "back to no limit");
        assertTrue(c.read("tenants/a/h2/io.max").contains("riops=300"));
    }
}
