package io.iotarget.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A throwaway one-host Ceph for a test: one monitor and one memstore OSD on loopback, pool
 * {@code rbd} initialised for RBD, cephx with an admin keyring, everything inside one directory.
 * Started and stopped by {@code scripts/ceph-dev} (the same cluster people start by hand), so the
 * two never drift apart; about 10 s to start. Requires Debian's ceph-mon, ceph-osd and
 * ceph-common ({@link Tools#require}: skipped on a developer's machine without them, failed
 * under CI=true). One test thread owns an instance; {@link #close} stops the daemons.
 */
public final class CephCluster implements AutoCloseable {
    private final Path script;
    private final Path dir;
    private final Path conf;

    private CephCluster(Path script, Path dir, Path conf) {
        this.script = script;
        this.dir = dir;
        this.conf = conf;
    }

    /** Starts one in {@code dir} (made if missing, left behind for the logs in {@code dir/log}). */
    public static CephCluster start(Path dir) throws IOException, InterruptedException {
        Tools.require("ceph-mon", "/usr/bin/ceph-mon");
        Tools.require("ceph-osd", "/usr/bin/ceph-osd");
        Tools.require("ceph (ceph-common)", "/usr/bin/ceph");
        Tools.require("rbd (ceph-common)", "/usr/bin/rbd");
        Tools.require("librbd1", "/usr/lib/x86_64-linux-gnu/librbd.so.1");
        Path script = checkoutFile("scripts/ceph-dev");
        Tools.Result started = Tools.run(120, List.of(script.toString(), "start", dir.toString()));
        if (started.exit() != 0) {
            Tools.run(60, List.of(script.toString(), "stop", dir.toString()));
            throw new IOException("scripts/ceph-dev start " + dir + " exited " + started.exit() + ":\n" + started.out());
        }
        List<String> lines = started.out().strip().lines().toList();
        Path conf = Path.of(lines.getLast());
        if (!Files.isRegularFile(conf)) throw new IOException("scripts/ceph-dev printed no ceph.conf:\n" + started.out());
        return new CephCluster(script, dir, conf);
    }

    /** The cluster's ceph.conf; it names the admin keyring, so {@code -c conf} is all a client needs. */
    public Path conf() {
        return conf;
    }

    /** The admin keyring (client.admin), beside {@link #conf}. */
    public Path adminKeyring() {
        return dir.resolve("ceph.client.admin.keyring");
    }

    /** Runs {@code rbd -c CONF args...}, which must succeed; its output. */
    public String rbd(String... args) throws IOException, InterruptedException {
        return Tools.ok(120, command("/usr/bin/rbd", args));
    }

    /** Runs {@code ceph -c CONF args...}, which must succeed; its output. */
    public String ceph(String... args) throws IOException, InterruptedException {
        return Tools.ok(120, command("/usr/bin/ceph", args));
    }

    private String[] command(String tool, String... args) {
        List<String> command = new ArrayList<>(List.of(tool, "-c", conf.toString()));
        command.addAll(List.of(args));
        return command.toArray(String[]::new);
    }

    /** Stops the monitor and the OSD (scripts/ceph-dev stop); the directory stays. */
    @Override
    public void close() throws IOException {
        Tools.Result stopped;
        try {
            stopped = Tools.run(60, List.of(script.toString(), "stop", dir.toString()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while stopping the cluster in " + dir, e);
        }
        if (stopped.exit() != 0) throw new IOException("scripts/ceph-dev stop exited " + stopped.exit() + ":\n" + stopped.out());
    }

    /** {@code relative} in the checkout: the first parent directory of the working directory that has it. */
    private static Path checkoutFile(String relative) {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.exists(p.resolve(relative))) return p.resolve(relative);
        }
        throw new IllegalStateException("no " + relative + " in any parent of " + Path.of("").toAbsolutePath());
    }
}
