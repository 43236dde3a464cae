package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import io.iotarget.frontend.nvmetcp.wire.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * ANA on the wire, against an in-test host: the Identify fields, the ANA log page's bytes, the
 * ANA change event on a parked AER when a state is written, and IO refused with the path
 * statuses while the namespace's group is not accessible through the port.
 */
class AnaTest {
    private static final String S = "subsystems/" + TargetFixture.NQN;
    private static final String GROUPS = "ports/1/ana_groups";
    /** What the Linux host asks for: header + NANAGRPID descriptors + MNAN nsids. */
    private static final int ANA_LOG_BYTES = 16 + 128 * 32 + 1024 * 4;
    private static final int RGO = 1 << 8;

    private TargetFixture fixture;

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
    }

    @AfterEach
    void stop() {
        fixture.close();
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Get Log Page 0Ch with LSP (RGO) and RAE as given. */
    private static ByteBuffer anaLog(TestHost h, int lsp, boolean retain) throws Exception {
        ByteBuffer sqe = h.sqe(0x02, 0xFFFFFFFF);
        int numd = ANA_LOG_BYTES / 4 - 1;
        sqe.putInt(40, 0x0C | lsp | (retain ? 1 << 15 : 0) | (numd & 0xFFFF) << 16);
        sqe.putInt(44, numd >>> 16);
        Completion c = h.execute(sqe, null, ANA_LOG_BYTES, false);
        assertEquals(0, c.status());
        return le(c.data());
    }

    @Test
    void shouldReportAnaInIdentifyAsNvmet() throws Exception {
        try (TestHost h = fixture.admin(false, false)) {
            ByteBuffer id = le(h.identify(1, 0).data());
            assertEquals(0x0B, id.get(76), "CMIC: multi-port, multi-controller, ANA reporting");
            assertEquals(1 << 11, id.getInt(92) & 1 << 11, "OAES: ANA change notices");
            assertEquals(10, id.get(342), "ANATT");
            assertEquals(0x1F, id.get(343), "ANACAP");
            assertEquals(128, id.getInt(344), "ANAGRPMAX");
            assertEquals(128, id.getInt(348), "NANAGRPID");
            ByteBuffer ns = le(h.identify(0, 1).data());
            assertEquals(1, ns.get(30), "NMIC shared");
            assertEquals(1, ns.getInt(92), "ANAGRPID");
            assertEquals(TargetFixture.DEVICE_BYTES / 512, ns.getLong(16), "NUSE while optimized");
            fixture.tree.write(S + "/namespaces/1/ana_grpid", "7");
            assertEquals(7, le(h.identify(0, 1).data()).getInt(92));
            assertEquals(7, le(h.identify(8, 1).data()).getInt(4), "CS-independent ANAGRPID");
            assertEquals(0, le(h.identify(0, 1).data()).getLong(16), "NUSE 0: group 7 is inaccessible on this port");
            fixture.tree.mkdir(GROUPS + "/7");
            fixture.tree.write(GROUPS + "/7/ana_state", "change");
            assertEquals(TargetFixture.DEVICE_BYTES / 512, le(h.identify(0, 1).data()).getLong(16), "NUSE while in change, as nvmet");
        }
    }

    @Test
    void shouldWriteTheAnaLogPageAsNvmet() throws Exception {
        try (TestHost h = fixture.admin(false, false)) {
            ByteBuffer log = anaLog(h, 0, false);
            assertEquals(0, log.getLong(0), "CHGCNT");
            assertEquals(1, log.getShort(8), "NGRPS: the default group only");
            assertEquals(1, log.getInt(16), "ANAGRPID");
            assertEquals(1, log.getInt(20), "NNSIDS");
            assertEquals(0, log.getLong(24), "descriptor CHGCNT");
            assertEquals(0x01, log.get(32), "optimized");
            assertEquals(1, log.getInt(48), "NSID 1");
            assertEquals(0, log.getInt(52), "nothing after the one descriptor");

            fixture.tree.write(GROUPS + "/1/ana_state", "non-optimized");
            fixture.tree.mkdir(GROUPS + "/3");
            fixture.tree.write(GROUPS + "/3/ana_state", "persistent-loss");
            for (int nsid : new int[] {4, 2}) {
                String ns = S + "/namespaces/" + nsid;
                fixture.tree.mkdir(ns);
                fixture.tree.write(ns + "/device_path", "default");
                fixture.tree.write(ns + "/ana_grpid", "3");
                fixture.tree.write(ns + "/enable", "1");
            }
            log = anaLog(h, 0, false);
            assertEquals(4, log.getLong(0), "one count per ana_state and ana_grpid write, none for mkdir");
            assertEquals(2, log.getShort(8));
            assertEquals(1, log.getInt(16));
            assertEquals(1, log.getInt(20));
            assertEquals(4, log.getLong(24));
            assertEquals(0x02, log.get(32), "non-optimized");
            assertEquals(1, log.getInt(48));
            int second = 16 + 32 + 4;
            assertEquals(3, log.getInt(second));
            assertEquals(2, log.getInt(second + 4), "NNSIDS");
            assertEquals(4, log.getLong(second + 8));
            assertEquals(0x04, log.get(second + 16), "persistent loss");
            assertEquals(2, log.getInt(second + 32), "NSIDs ascending");
            assertEquals(4, log.getInt(second + 36));

            ByteBuffer groupsOnly = anaLog(h, RGO, false);
            assertEquals(4, groupsOnly.getLong(0));
            assertEquals(2, groupsOnly.getShort(8));
            assertEquals(1, groupsOnly.getInt(16));
            assertEquals(0, groupsOnly.getInt(20), "RGO: no NSID list");
            assertEquals(0x02, groupsOnly.get(32));
            assertEquals(3, groupsOnly.getInt(48), "the next descriptor follows at once");
            assertEquals(0, groupsOnly.getInt(52));
            assertEquals(0x04, groupsOnly.get(64));
            assertEquals(0, groupsOnly.getInt(80), "nothing after the two descriptors");
        }
    }

    @Test
    void shouldCompleteAParkedAerWhenAStateChanges() throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (TestHost h = fixture.admin(false, false)) {
            assertEquals(0, h.setFeatures(0x0B, 1 << 8 | 1 << 11).status());
            Future<Completion> aer = pool.submit(() -> h.execute(h.sqe(0x0C, 0), null, 0, false));
            assertThrows(java.util.concurrent.TimeoutException.class, () -> aer.get(300, TimeUnit.MILLISECONDS), "parked until an event");
            fixture.tree.write(GROUPS + "/1/ana_state", "inaccessible");
            Completion event = aer.get(10, TimeUnit.SECONDS);
            assertEquals(0, event.status());
            assertEquals(0x000C0302, event.result(), "notice, ANA change, log 0Ch");

            fixture.tree.write(GROUPS + "/1/ana_state", "optimized");      // masked until the log is read
            Future<Completion> next = pool.submit(() -> h.execute(h.sqe(0x0C, 0), null, 0, false));
            assertThrows(java.util.concurrent.TimeoutException.class, () -> next.get(300, TimeUnit.MILLISECONDS), "no second event before the log is read");
            assertFalse(next.isDone());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void shouldReraiseTheEventOnceTheLogIsReadWithoutRae() throws Exception {
        try (TestHost h = fixture.admin(false, false)) {
            assertEquals(0, h.setFeatures(0x0B, 1 << 11).status());
            fixture.tree.write(GROUPS + "/1/ana_state", "change");
            assertEquals(0x000C0302, h.execute(h.sqe(0x0C, 0), null, 0, false).result());
            anaLog(h, 0, true);                                              // RAE: still masked
            fixture.tree.write(GROUPS + "/1/ana_state", "optimized");
            assertEquals(0x01, anaLog(h, 0, false).get(32));                  // without RAE: unmasked
            fixture.tree.write(GROUPS + "/1/ana_state", "non-optimized");
            Completion again = h.execute(h.sqe(0x0C, 0), null, 0, false);    // queued while no AER was parked
            assertEquals(0x000C0302, again.result());
        }
    }

    @Test
    void shouldRefuseIoWithThePathStatusOfTheGroupsState() throws Exception {
        try (TestHost admin = fixture.admin(false, false)) {
            int cntlid = (int) le(admin.identify(1, 0).data()).getShort(78);
            try (TestHost io = fixture.ioQueue(cntlid, 1, false, false, false)) {
                assertEquals(0, io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, 512, false).status());
                String[] states = {"inaccessible", "persistent-loss", "change"};
                int[] statuses = {Status.ANA_INACCESSIBLE, Status.ANA_PERSISTENT_LOSS, Status.ANA_TRANSITION};
                for (int i = 0; i < states.length; i++) {
                    fixture.tree.write(GROUPS + "/1/ana_state", states[i]);
                    assertEquals(statuses[i], io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, 512, false).status(), states[i] + ": read, no DNR");
                    assertEquals(statuses[i], io.execute(io.lbaCommand(0x01, 1, 0, 1, 0), new byte[512], 0, true).status(), states[i] + ": write");
                    assertEquals(statuses[i], io.execute(io.sqe(0x00, 1), null, 0, false).status(), states[i] + ": flush");
                }
                fixture.tree.write(GROUPS + "/1/ana_state", "non-optimized");
                assertEquals(0, io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, 512, false).status(), "served again, no reconnect");
                fixture.tree.write(S + "/namespaces/1/ana_grpid", "9");
                assertEquals(Status.ANA_INACCESSIBLE, io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, 512, false).status(),
                        "moved to a group this port does not have");
            }
        }
    }
}
