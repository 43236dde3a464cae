package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.engine.Engine;
import io.iotarget.transport.Transport;
import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;
import io.iotarget.frontend.nvmetcp.config.Subsystem;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.testkit.Await;
import java.time.Duration;

import static io.iotarget.testkit.Ports.freePort;

/**
 * An engine with a 64 MiB memory device named {@code default} and a target configured the way
 * the control plane's embedded default does it, listening on a free port of 127.0.0.1.
 */
final class TargetFixture implements AutoCloseable {
    static final String NQN = "nqn.2026-11.io.iotarget:default";
    static final long DEVICE_BYTES = 64L << 20;

    final Engine engine;
    final NvmeTarget target;
    final ConfigTree tree;
    final int port;

    TargetFixture() throws ControlException, java.io.IOException {
        this(Engine.Settings.defaults());
    }

    TargetFixture(Engine.Settings settings) throws ControlException, java.io.IOException {
        this(settings, null);
    }

    /**
     * On a transport of one event loop, which a test can stall ({@link #stallLoop}) as a
     * process paused by GC or SIGSTOP would: its hosts' commands wait in their sockets.
     */
    static TargetFixture oneLoop() throws ControlException, java.io.IOException {
        Transport.Settings d = Transport.Settings.defaults();
        return new TargetFixture(Engine.Settings.defaults(),
                                 new Transport(new Transport.Settings(1, d.sendTimeout(), d.maxConnections(), d.maxConnectionsPerHost(), d.sendBufferBytes(), d.poll())));
    }

    /** Makes the loop run nothing until {@code resume} opens (one loop: {@link #oneLoop}). */
    void stallLoop(java.util.concurrent.CountDownLatch resume) {
        target.transport().loop().execute(() -> {
            try {
                resume.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    /** The transport this fixture made and closes, or null when the target has its own. */
    private final Transport ownTransport;

    private TargetFixture(Engine.Settings settings, Transport transport) throws ControlException, java.io.IOException {
        engine = new Engine(io.iotarget.model.Clock.SYSTEM, true, settings);
        ownTransport = transport;
        target = transport == null ? new NvmeTarget(engine) : new NvmeTarget(engine, transport);
        tree = target.tree();
        engine.addDevice("default", new MemoryBackend(DEVICE_BYTES, 512, false), null, Engine.DEFAULT_QUEUE_DEPTH);
        String s = "subsystems/" + NQN;
        tree.mkdir(s);
        tree.write(s + "/attr_allow_any_host", "1");
        tree.mkdir(s + "/namespaces/1");
        tree.write(s + "/namespaces/1/device_path", "default");
        tree.write(s + "/namespaces/1/enable", "1");
        tree.mkdir("ports/1");
        tree.write("ports/1/addr_trtype", "tcp");
        tree.write("ports/1/addr_adrfam", "ipv4");
        tree.write("ports/1/addr_traddr", "127.0.0.1");
        port = listen(tree, s, "ports/1", NQN);
    }

    /** Links {@code subsystem} into {@code port} on a free TCP port, retrying if another process takes it first. */
    static int listen(ConfigTree tree, String subsystem, String port, String linkName) throws ControlException {
        for (int attempt = 1; ; attempt++) {
            int p = freePort();
            tree.write(port + "/addr_trsvcid", Integer.toString(p));
            try {
                tree.link(subsystem, port + "/subsystems/" + linkName);
                return p;
            } catch (ControlException e) {
                if (e.errno() != io.iotarget.model.Errno.EADDRINUSE || attempt == 5) throw e;
            }
        }
    }

    /** A host whose admin queue is connected and enabled on the default subsystem. */
    TestHost admin(boolean headerDigest, boolean dataDigest) throws Exception {
        TestHost h = new TestHost(port, headerDigest, dataDigest);
        h.bringUp(NQN, TestHost.HOST_NQN, 5000);
        return h;
    }

    /** An IO queue of controller {@code cntlid}. */
    TestHost ioQueue(int cntlid, int qid, boolean headerDigest, boolean dataDigest, boolean noSqFlowControl) throws Exception {
        TestHost h = new TestHost(port, headerDigest, dataDigest);
        TestHost.Completion c = h.connect(NQN, TestHost.HOST_NQN, qid, cntlid, 128, 0, noSqFlowControl);
        if (c.status() != 0) throw new IllegalStateException("IO connect failed: " + Integer.toHexString(c.status()));
        return h;
    }

    /**
     * Waits (up to 10 s) until namespace {@code nsid} of subsystem {@code nqn}, enabled with
     * resv_enable, has its state read from the store: enabling only queues that read, and until
     * it answers IO on the namespace gets ANA Inaccessible, which the raw test hosts do not
     * retry as a kernel host would.
     */
    void awaitReservationRead(String nqn, int nsid) throws InterruptedException {
        Await.until(Duration.ofSeconds(10), () -> {
            Subsystem s;
            target.lock();
            try {
                s = target.subsystems.get(nqn);
            } finally {
                target.unlock();
            }
            ActiveNamespace ns = s == null ? null : s.table.find(nsid);
            return ns != null && ns.reservation() != null && ns.reservation().state() != null;
        }, () -> "namespace " + nsid + " of " + nqn + ": its reservation state was read");
    }

    /** {@link #awaitReservationRead(String, int)} for namespace 1 of the default subsystem. */
    void awaitReservationRead() throws InterruptedException {
        awaitReservationRead(NQN, 1);
    }

    @Override
    public void close() {
        target.close();
        if (ownTransport != null) ownTransport.close();
        engine.close();
    }
}
