package io.iotarget.frontend.nbd;

import io.iotarget.engine.Engine;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.Tools;
import io.iotarget.transport.Transport;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Connections past an export's limit or the server's per-host limit are refused with the reason, and counted again once closed. */
class ConnectionLimitsTest {
    @Test
    void shouldRefuseGoPastTheExportsLimitWithPolicyAndTheReason() throws Exception {
        try (TestTarget target = new TestTarget()) {
            target.memoryExport("a", 1 << 20);
            target.server.tree().write("exports/a/max_connections", "2");
            assertEquals("2\n", target.server.tree().read("exports/a/max_connections"));
            RawClient first = RawClient.connect(target.port, "a", false);
            RawClient second = RawClient.connect(target.port, "a", false);
            try (RawClient third = new RawClient(target.port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES)) {
                third.option(NbdWire.OPT_GO, RawClient.goData("a"));
                RawClient.OptionReply r = third.optionReply();
                assertEquals(NbdWire.REP_ERR_POLICY, r.type());
                assertEquals("export a has its maximum of 2 connections", r.text());
                // Still negotiating: once a place frees, the same client may GO.
                first.close();
                Await.until(Duration.ofSeconds(5), () -> target.server.connectionCount() == 2, () -> target.server.connectionCount() + " connections, not 2");
                third.go("a", false);
                third.request(0, NbdWire.CMD_READ, 7, 0, 512);
                assertEquals(0, third.reply(512).error());
            }
            second.close();
        }
    }

    @Test
    void shouldRefuseEveryOptionPastThePerHostLimitAsRealClientsSeeIt() throws Exception {
        try (Engine engine = new Engine();
             Transport transport = new Transport(new Transport.Settings(1, Duration.ofSeconds(30), 100, 3, Transport.Settings.DEFAULT_SEND_BUFFER, Duration.ZERO));
             NbdServer server = new NbdServer(engine, transport)) {
            engine.addDevice("default", new MemoryBackend(1 << 20, 512, false), null, Engine.DEFAULT_QUEUE_DEPTH);
            server.tree().mkdir("exports/default");
            server.tree().write("exports/default/backend", "default");
            server.tree().write("exports/default/enable", "1");
            server.listen(new InetSocketAddress("127.0.0.1", 0));
            int port = server.localAddresses().getFirst().getPort();
            List<RawClient> held = new ArrayList<>();
            for (int i = 0; i < 3; i++) held.add(RawClient.connect(port, "default", false));
            Tools.require("nbdinfo", "/usr/bin/nbdinfo");
            Tools.Result info = Tools.run(20, List.of("nbdinfo", "nbd://127.0.0.1:" + port + "/default"));
            assertTrue(info.exit() != 0 && info.out().contains("opt_go"), info.toString());
            // libnbd prints the server's reason only in its debug output; the wire carries it:
            try (RawClient refused = new RawClient(port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES)) {
                refused.option(NbdWire.OPT_LIST, new byte[0]);
                RawClient.OptionReply r = refused.optionReply();
                assertEquals(NbdWire.REP_ERR_POLICY, r.type());
                assertEquals("host 127.0.0.1 has its maximum of 3 connections", r.text());
            }
            held.removeFirst().close();
            Await.until(Duration.ofSeconds(5), () -> transport.connectionCount() == 2, () -> transport.connectionCount() + " connections, not 2");
            assertEquals("1048576", Tools.ok(20, "nbdinfo", "--size", "nbd://127.0.0.1:" + port + "/default").strip());
            for (RawClient c : held) c.close();
        }
    }
}
