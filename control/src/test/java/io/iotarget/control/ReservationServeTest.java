package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.frontend.nvmetcp.reservation.ReservationState;
import io.iotarget.testkit.EtcdCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code serve} puts nvmet's reservations where docs/reservations.md says: with
 * {@code server.state}, a PTPL reservation in its sibling file, back after a restart; with a
 * {@code cluster} section, in the cluster's etcd.
 */
class ReservationServeTest {
    private static final String NQN = "nqn.2026-11.io.iotarget:resv";
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
    private static final int REGISTER = 0x0D, ACQUIRE = 0x11;
    private static final int CPTPL_SET = 3 << 30, WRITE_EXCLUSIVE = 1 << 8;
    private static final long KEY = 0x1234, OTHER_KEY = 0x5678;
    private static final int CONFLICT = 0x4083;
    /** A path error, no DNR: the host would retry elsewhere. */
    private static final int ANA_INACCESSIBLE = 0x302;

    @TempDir
    Path dir;

    /** {@code serverKeys} go into the server section, {@code sections} after the others. */
    private static String config(int port, String serverKeys, String sections) {
        return """
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" %s },
                  "backends": { "disk": { "type": "memory", "size": "16M", "enable": 1 } },
                  "nvmet": {
                    "subsystems": { "%s": { "attr_allow_any_host": 1,
                                            "namespaces": { "1": { "device_path": "disk", "resv_enable": 1, "enable": 1 } } } },
                    "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1",
                                      "addr_trsvcid": "%d", "subsystems": ["%s"] } } } %s }
                """.formatted(serverKeys, NQN, port, NQN, sections);
    }

    /** An IO queue of a new controller of HOST (host ID zero). */
    private static SocketChannel[] connect(int port) throws Exception {
        SocketChannel admin = RawClients.nvmePastIcReq(port, 0);
        int cntlid = RawClients.nvmeConnect(admin, NQN, HOST, 0, 0xFFFF, 32);
        SocketChannel io = RawClients.nvmePastIcReq(port, 0);
        RawClients.nvmeConnect(io, NQN, HOST, 1, cntlid, 32);
        return new SocketChannel[] {admin, io};
    }

    @Test
    void shouldKeepAPtplReservationBesideServerStateAcrossARestart() throws Exception {
        int port = freePort();
        String config = config(port, ", \"state\": \"" + dir.resolve("state.json") + "\"", "");
        Server server = Server.start(new ObjectMapper().readTree(config), dir);
        try {
            SocketChannel[] q = connect(port);
            assertEquals(0, RawClients.nvmeReservation(q[1], 10, REGISTER, CPTPL_SET, 0, KEY), "register with PTPL: the server can keep it");
            assertEquals(0, RawClients.nvmeReservation(q[1], 11, ACQUIRE, WRITE_EXCLUSIVE, KEY, 0));
            for (SocketChannel c : q) c.close();
        } finally {
            server.close();
        }
        String kept = Files.readString(dir.resolve("state.json.reservations"));
        assertTrue(kept.startsWith(NQN + "/1 "), kept);
        server = Server.start(new ObjectMapper().readTree(config), dir);
        try {
            SocketChannel[] q = connect(port);
            assertEquals(CONFLICT, RawClients.nvmeReservation(q[1], 10, REGISTER, 0, 0, OTHER_KEY), "registered before the restart, with another key");
            assertEquals(0, RawClients.nvmeReservation(q[1], 11, ACQUIRE, WRITE_EXCLUSIVE, KEY, 0), "and still the holder");
            for (SocketChannel c : q) c.close();
        } finally {
            server.close();
        }
    }

    @Test
    void shouldKeepReservationsInTheClusterStore() throws Exception {
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"))) {
            int port = freePort();
            String config = config(port, "", ", \"cluster\": { \"node\": \"a\", \"store\": \"" + etcd.uri() + "\", \"nodes\": 1 }");
            Server server = Server.start(new ObjectMapper().readTree(config), dir);
            try {
                SocketChannel[] q = connect(port);
                // Until its first membership lease is granted the node serves nothing on the namespace (ANA Inaccessible).
                long deadline = System.nanoTime() + 10_000_000_000L;
                int status;
                int cid = 10;
                while ((status = RawClients.nvmeReservation(q[1], cid++, REGISTER, 0, 0, KEY)) == ANA_INACCESSIBLE && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                assertEquals(0, status);
                for (SocketChannel c : q) c.close();
            } finally {
                server.close();
            }
            try (EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(2));
                 EtcdReservationStore store = new EtcdReservationStore(client, "probe", null)) {
                ReservationState s = store.read(NQN + "/1");
                assertEquals(1, s.registrants().size());
                assertEquals(KEY, s.registrants().getFirst().key());
            }
        }
    }
}
