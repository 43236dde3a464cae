package io.iotarget.iocontrol;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
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
    private static final String CHILD = "nqn:" + NQN;

    private final ControllerHarness h = new ControllerHarness();
    private final IoController c = h.controller;

    @Test
    void namesSayTheKindAndKeepNqnsAddressesSubjectsAndFingerprintsAndEscapeTheRest() {
        assertEquals("nqn:" + NQN, HostGroupName.of(HostIdentity.nqn(NQN)));
        assertEquals("addr:192.0.2.7", HostGroupName.of(HostIdentity.address("192.0.2.7")));
        assertEquals("addr:fe80::1+25eth0", HostGroupName.of(HostIdentity.address("fe80::1%eth0")));
        assertEquals("sha256:AB:CD:EF", HostGroupName.of(HostIdentity.certificateFingerprint("AB:CD:EF")));
        assertEquals("cert:CN=alice,O=t1", HostGroupName.of(HostIdentity.certificate("CN=alice,O=t1", "alice")));
        assertEquals("psk:client+20one", HostGroupName.of(psk("client one")));
        assertEquals("psk:a+2Fb", HostGroupName.of(psk("a/b")));
        assertEquals("psk:a+2Bb", HostGroupName.of(psk("a+b")), "'+' is the escape, so it is escaped itself");
        assertEquals("psk:..", HostGroupName.of(psk("..")), "after the kind a dot hides nothing");
        assertEquals("psk:caf+C3+A9", HostGroupName.of(psk("café")), "each UTF-8 byte");
        assertEquals("cert:CN=a+5C,b", HostGroupName.of(HostIdentity.certificate("CN=a\\,b", "a,b")), "RFC 2253's backslash");
    }

    /** Issue 29, hole 2: the identities that shared a group each get their own. */
    @Test
    void identitiesOfDifferentKindsOrSubjectsNeverShareAName() {
        List<HostIdentity> alices = List.of(HostIdentity.psk("alice"), HostIdentity.nqn("alice"),
                                            HostIdentity.certificate("CN=alice,O=t1", "alice"), HostIdentity.certificate("CN=alice,O=t2", "alice"));
        List<HostIdentity> loopbacks = List.of(HostIdentity.address("127.0.0.1"), HostIdentity.psk("127.0.0.1"),
                                               HostIdentity.certificate("CN=127.0.0.1", "127.0.0.1"));
        for (List<HostIdentity> same : List.of(alices, loopbacks)) {
            Set<String> names = new HashSet<>();
            for (HostIdentity id : same) assertTrue(names.add(HostGroupName.of(id)), "a name of its own: " + HostGroupName.of(id));
        }
        assertEquals(List.of("psk:alice", "nqn:alice", "cert:CN=alice,O=t1", "cert:CN=alice,O=t2"), alices.stream().map(HostGroupName::of).toList());
        // The NQNs x\xff, x\xfe and x\uFFFD: Connect refuses the first two (not UTF-8); as bytes they still differ here.
        Set<String> bytes = new HashSet<>();
        for (byte[] body : List.of(new byte[] {'x', (byte) 0xFF}, new byte[] {'x', (byte) 0xFE}, "x\uFFFD".getBytes(StandardCharsets.UTF_8))) {
            assertTrue(bytes.add(HostGroupName.of(HostIdentity.of(HostIdentity.Kind.NQN, body))));
        }
    }

    /** Issue 29, hole 1: an empty identity still names a group that a path can reach. */
    @Test
    void anEmptyIdentityNamesAGroupAPathReaches() throws Exception {
        Group a = h.group("tenants/a");
        for (HostIdentity.Kind kind : HostIdentity.Kind.values()) {
            HostIdentity empty = HostIdentity.of(kind, new byte[0]);
            String name = HostGroupName.of(empty);
            assertEquals(kind.label() + ":", name);
            Group child = c.tree().bindHostChild(a, empty);
            assertSame(child, c.group("tenants/a/" + name), "its path names it, not its parent");
            assertEquals(a, child.parent());
            c.unbind(child);
            c.rmdir("tenants/a/" + name);
            assertFalse(c.list("tenants/a").contains(name + "/"));
            assertTrue(a.online(), "rmdir of the host's group leaves its parent alone");
        }
    }

    @Test
    void namesDecodeBackToTheirIdentity() {
        for (HostIdentity id : List.of(HostIdentity.nqn(NQN), psk(""), psk("a+b c"), HostIdentity.certificate("CN=x,O=y", "x"),
                                       HostIdentity.of(HostIdentity.Kind.ADDR, new byte[] {0, (byte) 0xFF, '+', '.'}))) {
            assertEquals(id, HostGroupName.decode(HostGroupName.of(id)), HostGroupName.of(id));
        }
        assertNull(HostGroupName.decode("alice"), "a name before kind prefixes");
        assertNull(HostGroupName.decode("psk:+2D"), "'-' is kept, never escaped: not a name of()'s");
        assertNull(HostGroupName.decode("psk:+2"));
        assertNull(HostGroupName.decode("who:alice"));
    }

    @Test
    void anIdentityTooLongForANameIsNamedByItsHash() throws Exception {
        String dn = "CN=" + "x".repeat(300);
        String name = HostGroupName.of(HostIdentity.certificate(dn, null));
        assertEquals("cert-sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(dn.getBytes(StandardCharsets.UTF_8))), name);
        assertNull(HostGroupName.decode(name));
        Group a = h.group("tenants/a");
        assertEquals("/tenants/a/" + name, c.tree().bindHostChild(a, HostIdentity.certificate(dn, null)).path());
    }

    /**
     * A group configured for a host under the name versions before kind prefixes gave it: the
     * host's new group is made (the old one no longer applies), and the listener hears of the
     * old group once, so the operator can move its settings.
     */
    @Test
    void aGroupOfTheNameBeforeKindPrefixesIsReportedOnce() throws Exception {
        Group a = h.group("tenants/a");
        c.write("tenants/a/cgroup.subtree_control", "+io");
        c.mkdir("tenants/a/alice");
        c.write("tenants/a/alice/io.max", "259:0 riops=100");
        List<String> heard = new ArrayList<>();
        c.tree().onLegacyHostGroup((legacy, now) -> heard.add(legacy + " -> " + now));
        c.unbind(c.tree().bindHostChild(a, HostIdentity.certificate("CN=alice,O=t1", "alice")));
        c.unbind(c.tree().bindHostChild(a, HostIdentity.certificate("CN=alice,O=t1", "alice")));
        c.unbind(c.tree().bindHostChild(a, psk("alice")));
        assertEquals(List.of("/tenants/a/alice -> /tenants/a/cert:CN=alice,O=t1"), heard);
        assertEquals("", c.read("tenants/a/psk:alice/io.max"), "the old group's limit does not carry over by itself");
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

        Group child = c.tree().bindHostChild(a, HostIdentity.nqn(NQN));
        assertEquals("/tenants/a/" + CHILD, child.path());
        assertEquals("io\n", c.read("tenants/a/cgroup.subtree_control"));
        assertEquals("259:0 rbps=max wbps=1048576 riops=1000 wiops=max\n", c.read("tenants/a/" + CHILD + "/io.max"));
        ControlException busy = assertThrows(ControlException.class, () -> c.rmdir("tenants/a/" + CHILD));
        assertEquals(Errno.EBUSY, busy.errno());
        assertEquals("automatic 1\n", c.read("tenants/a/" + CHILD + "/iotarget.host"), "made by the connect, used by nobody");
        assertEquals(Errno.ENOENT, assertThrows(ControlException.class, () -> c.read("tenants/a/iotarget.host")).errno(), "no host's group");

        assertSame(child, c.tree().bindHostChild(a, HostIdentity.nqn(NQN)), "a second connection of the host shares its child");
        c.write("tenants/a/" + CHILD + "/io.max", "259:0 riops=50");
        assertEquals("automatic 0\n", c.read("tenants/a/" + CHILD + "/iotarget.host"), "written to: the operator's");
        c.unbind(child);
        assertThrows(ControlException.class, () -> c.rmdir("tenants/a/" + CHILD), "one connection still uses it");
        c.unbind(child);
        assertSame(child, c.tree().bindHostChild(a, HostIdentity.nqn(NQN)));
        assertEquals("259:0 rbps=max wbps=1048576 riops=50 wiops=max\n", c.read("tenants/a/" + CHILD + "/io.max"),
                     "a limit written to the child sticks across reconnects");
        c.unbind(child);
        c.rmdir("tenants/a/" + CHILD);                    // idle: an ordinary group
    }

    @Test
    void anExistingChildOfThatNameIsUsedAsItIs() throws Exception {
        Group a = h.group("tenants/a");
        c.write("tenants/a/io.max.per_host", "259:0 riops=1000");
        c.write("tenants/a/cgroup.subtree_control", "+io");
        Group made = c.mkdir("tenants/a/addr:192.0.2.7");
        c.write("tenants/a/addr:192.0.2.7/io.max", "259:0 riops=5000");
        assertSame(made, c.tree().bindHostChild(a, HostIdentity.address("192.0.2.7")));
        assertEquals("259:0 rbps=max wbps=max riops=5000 wiops=max\n", c.read("tenants/a/addr:192.0.2.7/io.max"));
    }

    @Test
    void aHostBeyondMaxDescendantsIsRefusedWithMkdirsErrno() throws Exception {
        Group a = h.group("tenants/a");
        c.write("tenants/a/cgroup.max.descendants", "1");
        c.tree().bindHostChild(a, psk("one"));
        ControlException full = assertThrows(ControlException.class, () -> c.tree().bindHostChild(a, psk("two")));
        assertEquals(Errno.EAGAIN, full.errno(), "cgroup.max.descendants caps how many hosts get a group");
    }

    @Test
    void mkdirRefusesNoNamesAndTakesTheCharactersOfSubjects() throws Exception {
        h.group("tenants/a");
        assertEquals("/tenants/a/cert:CN=bob,O=t1", c.mkdir("tenants/a/cert:CN=bob,O=t1").path(), "to configure a host before it connects");
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> c.mkdir("tenants/a/x y")).errno());
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
        Group connected = c.tree().bindHostChild(a, psk("connected"));
        c.mkdir("tenants/a/operators");
        c.unbind(c.tree().bindHostChild(b, psk("gone-first")));
        c.unbind(c.tree().bindHostChild(a, psk("gone-second")));
        assertEquals(0, c.tree().hostChildrenRemoved());

        c.unbind(c.tree().bindHostChild(a, psk("new-1")));
        assertFalse(c.list("tenants/b").contains("psk:gone-first/"), "idle longest, under the same limit: removed");
        assertTrue(c.list("tenants/a").contains("psk:gone-second/"));
        assertEquals(1, c.tree().hostChildrenRemoved());
        c.tree().bindHostChild(a, psk("new-2"));
        assertFalse(c.list("tenants/a").contains("psk:gone-second/"));
        c.tree().bindHostChild(a, psk("new-3"));
        assertFalse(c.list("tenants/a").contains("psk:new-1/"));
        assertEquals(3, c.tree().hostChildrenRemoved());

        ControlException full = assertThrows(ControlException.class, () -> c.tree().bindHostChild(b, psk("one-too-many")));
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
        Group connected = c.tree().bindHostChild(a, psk("connected"));
        Group used = c.tree().bindHostChild(a, psk("used"));
        c.write("tenants/a/psk:used/io.max", "259:0 riops=300");
        c.unbind(used);
        assertTrue(connected.automatic());
        assertFalse(used.automatic(), "written to: the operator's");
        int kept = GroupTree.IDLE_HOST_CHILDREN_KEPT;
        for (int i = 0; i < kept; i++) c.unbind(c.tree().bindHostChild(a, psk("h" + i)));
        assertEquals(kept + 2, a.children().size(), "up to the bound, every idle one stays");
        for (int i = kept; i < 3 * kept; i++) c.unbind(c.tree().bindHostChild(a, psk("h" + i)));
        assertEquals(kept + 2, a.children().size());
        assertSame(connected, c.group("tenants/a/psk:connected"));
        assertSame(used, c.group("tenants/a/psk:used"));
        assertFalse(c.list("tenants/a").contains("psk:h" + (2 * kept - 1) + "/"), "the oldest idle went");
        assertTrue(c.list("tenants/a").contains("psk:h" + (2 * kept) + "/"));
        c.unbind(c.tree().bindHostChild(a, psk("h" + (2 * kept))));      // back again: now the newest idle
        c.unbind(c.tree().bindHostChild(a, psk("new")));
        assertTrue(c.list("tenants/a").contains("psk:h" + (2 * kept) + "/"));
        assertFalse(c.list("tenants/a").contains("psk:h" + (2 * kept + 1) + "/"));
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
        c.tree().bindHostChild(a, psk("h1"));
        c.tree().bindHostChild(a, psk("h2"));
        c.write("tenants/a/psk:h2/io.max", "259:0 riops=300");      // changed by hand: keeps its own
        c.write("tenants/a/io.max.per_host", "259:0 riops=2000");
        assertEquals("259:0 rbps=max wbps=max riops=2000 wiops=max\n", c.read("tenants/a/psk:h1/io.max"));
        assertEquals("259:0 rbps=max wbps=max riops=300 wiops=max\n", c.read("tenants/a/psk:h2/io.max"));
        c.write("tenants/a/io.max.per_host", "259:0 riops=max");
        assertEquals("", c.read("tenants/a/psk:h1/io.max"), "back to no limit");
        assertTrue(c.read("tenants/a/psk:h2/io.max").contains("riops=300"));
    }

    private static HostIdentity psk(String username) {
        return HostIdentity.psk(username);
    }
}
