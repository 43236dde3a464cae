package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import io.iotarget.frontend.nvmetcp.command.Fabrics;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.config.Subsystem;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A Host ID belongs to one host NQN per subsystem (docs/decisions.md): the first admin Connect
 * that uses it binds it to its NQN while a controller of that NQN with it lives or it is a
 * registrant of a reservation on the subsystem's namespaces; an admin Connect of another NQN
 * with it meanwhile is Connect Invalid Host, pointing at the Host ID, and counted.
 */
class HostIdBindingTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final String ALICE = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001";
    private static final String MALLORY = "nqn.2014-08.org.nvmexpress:uuid:eeeeeeee-0000-0000-0000-000000000005";
    private static final int REFUSED = Status.CONNECT_INVALID_HOST | Status.DNR;
    private static final long WAIT_MS = 10_000;

    private TargetFixture fixture;

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
    }

    @AfterEach
    void stop() {
        fixture.close();
    }

    private Completion adminConnect(TestHost host, String hostNqn, byte[] hostId) throws Exception {
        return host.connect(TargetFixture.NQN, hostNqn, hostId, 0, 0xFFFF, 32, 0, false);
    }

    private long conflicts() {
        return fixture.target.counters().counter(NvmeTcpCounter.HOST_ID_CONFLICTS);
    }

    /** Waits (up to {@link #WAIT_MS}) until the subsystem has no live controller. */
    private void awaitNoControllers() throws InterruptedException {
        Subsystem s = fixture.target.subsystems.get(TargetFixture.NQN);
        Await.until(Duration.ofMillis(WAIT_MS), () -> {
            fixture.target.lock();
            try {
                return fixture.target.controllers(s).isEmpty();
            } finally {
                fixture.target.unlock();
            }
        }, () -> "the closed controllers went");
    }

    @Test
    void anotherNqnWithALiveHostsIdIsRefusedUntilThatHostGoes() throws Exception {
        byte[] id = TestHost.hostId(ALICE);
        try (TestHost alice = new TestHost(fixture.port, false, false)) {
            assertEquals(0, adminConnect(alice, ALICE, id).status());
            try (TestHost mallory = new TestHost(fixture.port, false, false)) {
                Completion c = adminConnect(mallory, MALLORY, id);
                assertEquals(REFUSED, c.status(), "the Host ID is alice's while her controller lives");
                assertEquals(Fabrics.inData(Fabrics.DATA_HOSTID), c.result());
            }
            assertEquals(1, conflicts());
            try (TestHost again = new TestHost(fixture.port, false, false)) {
                assertEquals(0, adminConnect(again, ALICE, id).status(), "alice's own second controller");
            }
        }
        awaitNoControllers();
        try (TestHost mallory = new TestHost(fixture.port, false, false)) {
            assertEquals(0, adminConnect(mallory, MALLORY, id).status(), "alice has gone and holds no registration: the Host ID is free");
        }
        assertEquals(1, conflicts());
    }

    /** A registration outlives its controllers, and keeps the Host ID its registrant's. */
    @Test
    void aRegistrantsHostIdStaysItsNqnsAfterItsControllersGo() throws Exception {
        fixture.tree.write(NS + "/enable", "0");
        fixture.tree.write(NS + "/resv_enable", "1");
        fixture.tree.write(NS + "/enable", "1");
        fixture.awaitReservationRead();
        byte[] id = new byte[16];
        Arrays.fill(id, (byte) 7);                     // ReservationHost 7's
        try (ReservationHost registrant = new ReservationHost(fixture.port, TargetFixture.NQN, 7)) {
            assertEquals(0, registrant.register(0x7777));
        }
        awaitNoControllers();
        try (TestHost mallory = new TestHost(fixture.port, false, false)) {
            assertEquals(REFUSED, adminConnect(mallory, MALLORY, id).status(), "it would act with the registration it did not make");
        }
        assertEquals(1, conflicts());
        try (ReservationHost back = new ReservationHost(fixture.port, TargetFixture.NQN, 7)) {
            assertEquals(0, back.register(1, false, 0, 0x7777, 0), "the registrant itself comes back and unregisters");
        }
        awaitNoControllers();
        try (TestHost other = new TestHost(fixture.port, false, false)) {
            assertEquals(0, adminConnect(other, MALLORY, id).status(), "no registration, no controller: free");
        }
    }

    /** The Host ID 0 is a host saying it has none: it binds nothing, so two hosts that send it both connect. */
    @Test
    void theHostIdZeroBindsNothing() throws Exception {
        byte[] none = new byte[16];
        try (TestHost alice = new TestHost(fixture.port, false, false);
             TestHost other = new TestHost(fixture.port, false, false)) {
            assertEquals(0, adminConnect(alice, ALICE, none).status());
            assertEquals(0, adminConnect(other, MALLORY, none).status());
        }
        assertEquals(0, conflicts());
    }
}
