package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.command.Fabrics;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.iocontrol.GroupTree;
import io.iotarget.iocontrol.IoController;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Who pays for an NVMe/TCP host's IO: the namespace's group, else the host entry's
 * ({@code hosts/NQN/cgroup}), else the root; under {@code cgroup_per_host}, the child of that
 * group named after the host NQN ({@code nqn:NQN}), made at the admin Connect with io.max.per_host, kept after
 * the host goes. (A Linux host in a guest: KernelHostTest.)
 */
class PerHostChargingTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final String HOST_A = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001";
    private static final String HOST_B = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-0000-0000-000000000002";
    private static final int LBA = 512;

    private TargetFixture fixture;
    private IoController cg;
    private String dev;
    private final List<TestHost> hosts = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
        cg = fixture.engine.controller();
        dev = fixture.engine.device("default").number().toString();
        cg.mkdir("tenant");
        cg.mkdir("other");
    }

    @AfterEach
    void stop() throws Exception {
        for (TestHost h : hosts) h.close();
        fixture.close();
    }

    /** Admin and one IO queue of {@code hostNqn}; returns the IO queue. */
    private TestHost connect(String hostNqn) throws Exception {
        TestHost admin = new TestHost(fixture.port, false, false);
        hosts.add(admin);
        int cntlid = admin.bringUp(TargetFixture.NQN, hostNqn, 5000);
        TestHost io = new TestHost(fixture.port, false, false);
        hosts.add(io);
        assertEquals(0, io.connect(TargetFixture.NQN, hostNqn, 1, cntlid, 128, 0, false).status());
        return io;
    }

    /** The namespace charged to tenant, a child per host. */
    private void perHostUnderTenant() throws ControlException {
        fixture.tree.write(NS + "/enable", "0");
        fixture.tree.write(NS + "/cgroup", "tenant");
        fixture.tree.write(NS + "/cgroup_per_host", "1");
        fixture.tree.write(NS + "/enable", "1");
    }

    private void read(TestHost io, int blocks) throws Exception {
        assertEquals(0, io.execute(io.lbaCommand(0x02, 1, 0, blocks, 0), null, blocks * LBA, false).status());
    }

    private long rbytes(String group) throws ControlException {
        for (String line : cg.read(group + "/io.stat").split("\n")) {
            if (!line.startsWith(dev + " ")) continue;
            for (String kv : line.split(" ")) if (kv.startsWith("rbytes=")) return Long.parseLong(kv.substring(7));
        }
        return 0;
    }

    @Test
    void eachHostPaysInItsOwnChildOfTheNamespacesGroup() throws Exception {
        perHostUnderTenant();
        cg.write("tenant/io.max.per_host", dev + " riops=500");
        TestHost a = connect(HOST_A);
        assertEquals(List.of("nqn:" + HOST_A + "/"), cg.list("tenant").stream().filter(e -> e.endsWith("/")).toList(), "made at the Connect");
        assertEquals(dev + " rbps=max wbps=max riops=500 wiops=max\n", cg.read("tenant/nqn:" + HOST_A + "/io.max"));
        TestHost b = connect(HOST_B);
        read(a, 8);
        read(b, 16);
        read(b, 16);
        assertEquals(8L * LBA, rbytes("tenant/nqn:" + HOST_A));
        assertEquals(32L * LBA, rbytes("tenant/nqn:" + HOST_B));
        assertEquals(40L * LBA, rbytes("tenant"), "the namespace's group holds the sum");
        ControlException busy = assertThrows(ControlException.class, () -> cg.rmdir("tenant/nqn:" + HOST_A));
        assertEquals(Errno.EBUSY, busy.errno(), "in use while the host is connected");
        ControlException fixed = assertThrows(ControlException.class, () -> fixture.tree.write(NS + "/cgroup_per_host", "0"));
        assertEquals(Errno.EBUSY, fixed.errno(), "fixed while enabled");
        for (TestHost h : hosts) h.close();
        hosts.clear();
        for (int i = 0; i < 100 && !cg.read("tenant/nqn:" + HOST_A + "/cgroup.events").startsWith("populated 0"); i++) Thread.sleep(50);
        assertEquals(8L * LBA, rbytes("tenant/nqn:" + HOST_A), "the stats stay after the host went");
        cg.rmdir("tenant/nqn:" + HOST_A);
    }

    /**
     * Issue 29, hole 1 and the bytes of hole 2: a host NQN that is empty (its first byte NUL) or
     * not UTF-8 is refused at the admin Connect, pointing at the host NQN field, and makes no
     * group; so {@code x\xff} and {@code x\xfe} cannot both become {@code x\uFFFD}, which, valid
     * UTF-8, connects and gets a group of its own.
     */
    @Test
    void anEmptyOrNonUtf8HostNqnIsRefusedAtConnect() throws Exception {
        perHostUnderTenant();
        byte[][] refused = {{0, 'a', 'l', 'i', 'c', 'e'}, {}, {'x', (byte) 0xFF}, {'x', (byte) 0xFE}, {'x', (byte) 0xC3}};
        for (byte[] nqn : refused) {
            try (TestHost admin = new TestHost(fixture.port, false, false)) {
                TestHost.Completion c = admin.connect(TargetFixture.NQN, nqn, TestHost.hostId("x"), 0, 0xFFFF, 32, 0, false);
                assertEquals(Status.CONNECT_INVALID_PARAMETERS | Status.DNR, c.status(), java.util.HexFormat.of().formatHex(nqn));
                assertEquals(Fabrics.inData(Fabrics.DATA_HOSTNQN), c.result());
            }
        }
        assertEquals(List.of(), children(), "no group for a refused host");
        TestHost io = connect("x\uFFFD");
        read(io, 1);
        assertEquals(List.of("nqn:x+EF+BF+BD"), children());
        assertEquals(1L * LBA, rbytes("tenant/nqn:x+EF+BF+BD"));
    }

    /**
     * A host that connects under ever new NQNs (attr_allow_any_host 1): each one's child goes
     * once more than {@link GroupTree#IDLE_HOST_CHILDREN_KEPT} are idle, so the tree, the heap,
     * the threads and the descriptors come back to where they were; the connected host's child
     * stays, and the namespace's group still holds the sum of every host's reads.
     */
    @Test
    void aHostCyclingThroughNqnsLeavesABoundedTree() throws Exception {
        perHostUnderTenant();
        TestHost a = connect(HOST_A);
        read(a, 8);
        int kept = GroupTree.IDLE_HOST_CHILDREN_KEPT;
        int identities = kept + 64;
        long[] heap = new long[2];
        int threads = 0;
        long descriptors = 0;
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < identities; i++) {
                TestHost io = connect(String.format("nqn.2014-08.org.nvmexpress:uuid:%08x-0000-0000-0000-%012x", round, i));
                read(io, 1);
                for (TestHost h : hosts.subList(2, hosts.size())) h.close();
                hosts.subList(2, hosts.size()).clear();
            }
            for (int i = 0; i < 200 && idleChildren() < children().size() - 1; i++) Thread.sleep(50);   // the last disconnects
            assertEquals(kept + 1, children().size(), "the connected host's child and the idle ones kept");
            if (round == 0) {
                threads = Thread.activeCount();
                descriptors = descriptors();
            }
            heap[round] = usedHeapAfterGc();
        }
        assertTrue(children().contains("nqn:" + HOST_A), "a connected host's child is never removed");
        assertEquals(8L * LBA, rbytes("tenant/nqn:" + HOST_A));
        assertEquals((8L + 2 * identities) * LBA, rbytes("tenant"), "the removed children's reads stay in the sum");
        // At most what the first round left: a pool thread of that round may have ended since.
        for (int i = 0; i < 100 && (Thread.activeCount() > threads || descriptors() > descriptors); i++) Thread.sleep(50);
        assertTrue(Thread.activeCount() <= threads, "no thread per host: " + Thread.activeCount() + " after the second round, " + threads + " after the first");
        assertTrue(descriptors() <= descriptors, "no descriptor left per host: " + descriptors() + " after the second round, " + descriptors + " after the first");
        assertTrue(heap[1] - heap[0] < (8L << 20), "the heap after another " + identities + " hosts: " + heap[0] + " then " + heap[1] + " bytes");
    }

    /**
     * The same host against an operator's cgroup.max.descendants: the groups of the NQNs it
     * dropped make room for the next host, so a host that connects after it still gets its
     * own group and does IO, and the connected host's group stays.
     */
    @Test
    void aHostCyclingThroughNqnsCannotFillMaxDescendantsForTheNext() throws Exception {
        perHostUnderTenant();
        cg.write("tenant/cgroup.max.descendants", "4");
        TestHost a = connect(HOST_A);
        read(a, 8);
        for (int i = 0; i < 20; i++) {
            TestHost io = connect(String.format("nqn.2014-08.org.nvmexpress:uuid:cccccccc-0000-0000-0000-%012x", i));
            read(io, 1);
            for (TestHost h : hosts.subList(2, hosts.size())) h.close();
            hosts.subList(2, hosts.size()).clear();
            for (int w = 0; w < 200 && idleChildren() < children().size() - 1; w++) Thread.sleep(10);   // its disconnect
        }
        TestHost b = connect(HOST_B);
        read(b, 2);
        assertEquals(2L * LBA, rbytes("tenant/nqn:" + HOST_B), "the next host got a group of its own");
        assertTrue(children().contains("nqn:" + HOST_A) && children().size() <= 4, "within the limit, the connected host's group kept: " + children());
        assertEquals((8L + 20 + 2) * LBA, rbytes("tenant"), "the removed groups' reads stay in the sum");
        assertEquals(0, fixture.target.counters().counter(NvmeTcpCounter.HOST_GROUP_REFUSED), "no host was refused its group");
    }

    private List<String> children() throws ControlException {
        return cg.list("tenant").stream().filter(e -> e.endsWith("/")).map(e -> e.substring(0, e.length() - 1)).toList();
    }

    private long idleChildren() throws ControlException {   // no connection of its host left
        var lock = cg.tree().treeLock();                       // disconnects remove children meanwhile
        lock.lock();
        try {
            return cg.group("tenant").children().stream().filter(g -> g.members() == 0).count();
        } finally {
            lock.unlock();
        }
    }

    private static long descriptors() throws java.io.IOException {
        try (var fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    private static long usedHeapAfterGc() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) System.gc();
        return rt.totalMemory() - rt.freeMemory();
    }

    @Test
    void aHostEntrysGroupPaysWhereTheNamespaceHasNone() throws Exception {
        fixture.tree.mkdir("hosts/" + HOST_B);
        fixture.tree.write("hosts/" + HOST_B + "/cgroup", "other");
        assertEquals("/other\n", fixture.tree.read("hosts/" + HOST_B + "/cgroup"));
        assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> cg.rmdir("other")).errno(), "held while the entry names it");
        TestHost a = connect(HOST_A);
        TestHost b = connect(HOST_B);
        long rootBefore = rbytes("");
        read(a, 8);
        read(b, 16);
        assertEquals(16L * LBA, rbytes("other"), "B's entry names other");
        assertEquals(24L * LBA, rbytes("") - rootBefore, "A has no entry: the root");

        fixture.tree.write(NS + "/enable", "0");
        fixture.tree.write(NS + "/cgroup_per_host", "1");
        fixture.tree.write(NS + "/enable", "1");
        read(b, 4);                                     // enabled after B's Connect: its child comes with its first IO
        assertEquals(4L * LBA, rbytes("other/nqn:" + HOST_B), "per host under the host's group");
        read(a, 4);
        assertEquals(4L * LBA, rbytes("nqn:" + HOST_A), "per host under the root for a host without a group");

        fixture.tree.write(NS + "/enable", "0");
        fixture.tree.write(NS + "/cgroup_per_host", "0");
        fixture.tree.write(NS + "/cgroup", "tenant");
        fixture.tree.write(NS + "/enable", "1");
        read(b, 2);
        assertEquals(2L * LBA, rbytes("tenant"), "the namespace's own group comes first");
        assertTrue(rbytes("other") == 20L * LBA);
    }
}
