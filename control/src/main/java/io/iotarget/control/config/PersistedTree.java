package io.iotarget.control.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.tree.ForwardingTree;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The mounted trees as the control endpoint serves them when the config names a
 * {@code server.state} file: every change that a tree accepts is kept before the client hears
 * that it succeeded, so a restart comes back as the last acknowledged change left it. Four
 * files, all in the state file's directory:
 *
 * <ul>
 *   <li>{@code NAME}, the snapshot: the whole configuration as {@link ConfigSaver} writes it
 *       (a config {@code serve --config} takes), replaced atomically ({@link StateFile});</li>
 *   <li>{@code NAME.journal}, the changes since that snapshot ({@link Journal}): a change
 *       appends one line and fsyncs it, so it costs the change's size, not the tree's;</li>
 *   <li>{@code NAME.journal.next}, while a compaction runs: the changes since the snapshot
 *       being written;</li>
 *   <li>{@code NAME.prev}, the snapshot before the last one, kept for a snapshot that can no
 *       longer be read.</li>
 * </ul>
 *
 * Once the journal is larger than the snapshot (and at least {@link #MIN_COMPACT_BYTES}) it is
 * compacted: under the change lock the trees are saved to memory and a new journal is started
 * at {@code NAME.journal.next}, naming that snapshot; then, in the background, the snapshot
 * replaces {@code NAME} and {@code NAME.journal.next} is renamed over {@code NAME.journal}. A
 * journal names its snapshot by hash, so whatever step a crash stops, a restart replays the
 * snapshot, then the first journal (of {@code .journal}, {@code .journal.next}) that names it
 * and any after it. Each snapshot costs the tree's size and comes after at least as many bytes
 * of changes, so the cost per change stays the change's size.
 *
 * <p>Changes run one at a time, in the order the journal keeps them: one that waits (an nvmet
 * namespace's disable waits for IO in flight) holds the next back. If the journal cannot be
 * written (a full disk), the change stays made — the trees cannot take it back — and the
 * client gets EIO saying so; the next change then writes a whole snapshot. Any thread.
 */
public final class PersistedTree extends ForwardingTree implements AutoCloseable {
    /** A journal shorter than this (about a hundred changes) is not compacted, however small the tree. */
    static final long MIN_COMPACT_BYTES = 4 << 10;
    private static final System.Logger LOG = System.getLogger(PersistedTree.class.getName());

    private final ConfigTree tree;
    private final ConfigSaver saver;
    private final StateFile state;
    private final Path journalFile;
    private final Path nextFile;
    private final Path previousFile;
    private final boolean restored;
    private final ReentrantLock lock = new ReentrantLock();
    private final ExecutorService compactor = Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon()
            .name("iotarget-state-compaction").unstarted(r));
    /** The journal changes go to; lock. */
    private Journal journal;
    /** The size of the snapshot the journal follows; lock. */
    private long snapshotBytes;
    /** The background compaction, done when none runs; lock. */
    private Future<?> compaction = CompletableFuture.completedFuture(null);
    /** The journal lacks a change, or a compaction failed: the next change writes a whole snapshot. */
    private volatile boolean broken;
    /** The group tree changed outside a request since the last snapshot (cgroup_per_host): the next change writes a whole snapshot. */
    private volatile boolean hostGroupsMade;

    private PersistedTree(ConfigTree tree, ConfigSaver saver, StateFile state, boolean restored) {
        this.tree = tree;
        this.saver = saver;
        this.state = state;
        this.journalFile = sibling(state.path(), ".journal");
        this.nextFile = sibling(state.path(), ".journal.next");
        this.previousFile = sibling(state.path(), ".prev");
        this.restored = restored;
    }

    private static Path sibling(Path file, String suffix) {
        return file.resolveSibling(file.getFileName() + suffix);
    }

    /**
     * Opens {@code server.state}: refuses it when another user could have chosen its contents
     * ({@link Ownership}); restores the trees from it when it exists, and otherwise applies the
     * config's trees; then writes a fresh snapshot.
     *
     * @param tree   the mounted trees, as the journal's paths name them
     * @param config the config, whose trees apply when there is no state file yet
     * @param trees  the trees by section, for a config
     */
    public static PersistedTree open(Path file, ConfigTree tree, ConfigSaver saver, JsonNode config, ConfigLoader.Trees trees)
            throws ConfigException {
        StateFile state = new StateFile(file);
        PersistedTree p = new PersistedTree(tree, saver, state, Files.exists(state.path(), LinkOption.NOFOLLOW_LINKS));
        String key = "server.state = \"" + state.path() + "\": ";
        Path dir = state.path().getParent();
        try {
            Ownership.requirePrivate(dir, "its directory", "make the directory yours and writable by no one else (chown, chmod go-w),"
                                                           + " or set server.state in one that is");
            for (Path f : List.of(state.path(), p.journalFile, p.nextFile, p.previousFile)) {
                if (Files.exists(f, LinkOption.NOFOLLOW_LINKS)) {
                    Ownership.requirePrivate(f, "the file", "check its contents, then make it yours with mode 0600, or remove it");
                }
            }
            state.removeStrays();
        } catch (NoSuchFileException e) {
            throw new ConfigException(key + "its directory " + dir + " does not exist", e);
        } catch (IOException e) {
            throw new ConfigException(key + e.getMessage(), e);
        }
        if (p.restored) p.restore(key, trees);
        else ConfigLoader.apply(config, trees);
        p.lock.lock();
        try {
            p.compactNow();
        } catch (IOException | ControlException e) {
            throw new ConfigException(key + "cannot write it: " + e.getMessage(), e);
        } finally {
            p.lock.unlock();
        }
        return p;
    }

    /** Whether {@link #open} restored the trees from the state file (rather than the config's). */
    public boolean restored() {
        return restored;
    }

    /** The snapshot, then the journals that follow it. Its server section is checked but not used: the config's wins. */
    private void restore(String key, ConfigLoader.Trees trees) throws ConfigException {
        String advice = "move " + state.path().getFileName() + " away to start from the config's trees"
                        + (Files.exists(previousFile) ? "; " + previousFile + " holds the state as the compaction before the last left it" : "");
        try {
            byte[] snapshot = Files.readAllBytes(state.path());
            JsonNode saved = ConfigLoader.parse(new String(snapshot, StandardCharsets.UTF_8), "");
            ConfigLoader.serverSettings(saved);
            ConfigLoader.apply(saved, trees);
            boolean follows = false;
            for (Path j : List.of(journalFile, nextFile)) {
                if (!Files.exists(j)) continue;
                follows = follows || Journal.follows(j, snapshot);
                if (follows) Journal.replay(j, tree, advice);
            }
        } catch (ConfigException e) {
            throw new ConfigException(key + e.getMessage() + (e.getMessage().endsWith(advice) ? "" : " (" + advice + ")"), e);
        } catch (IOException e) {
            throw new ConfigException(key + "cannot read it: " + e.getMessage() + " (" + advice + ")", e);
        }
    }

    /**
     * The group tree changed in a way a save keeps but no endpoint request named, so the journal
     * cannot hold it ({@link io.iotarget.iocontrol.GroupTree#onHostChildMade}): a connect under
     * {@code cgroup_per_host} enabled io in a cgroup.subtree_control, or a host's automatic
     * group, which saves leave out, became an ordinary one as a request used it. The next
     * change writes a whole snapshot instead (the one that used it, when a request did), so a
     * journaled write to that group (its io.max) never follows a snapshot that lacks the group.
     * Until then a restart lacks only what a reconnect makes again. Any thread (under the group
     * tree's lock): it only sets a flag.
     */
    public void hostGroupMade() {
        hostGroupsMade = true;
    }

    /** Saves the trees as a new snapshot and starts an empty journal after it. Lock held. */
    private void compactNow() throws IOException, ControlException {
        awaitCompaction();
        hostGroupsMade = false;                         // before the save: a group made during it sets it again
        byte[] snapshot = saver.save().getBytes(StandardCharsets.UTF_8);
        writeSnapshot(snapshot);
        Journal previous = journal;
        journal = null;                                 // until the new one exists: a failure leaves broken set, and no journal to append to
        if (previous != null) previous.close();
        journal = Journal.create(journalFile, snapshot);
        Files.deleteIfExists(nextFile);
        StateFile.syncDirectory(journalFile.getParent());
        snapshotBytes = snapshot.length;
        broken = false;
    }

    /**
     * Once the journal has outgrown the snapshot, starts a compaction in the background. Lock
     * held. A failure here costs nothing yet (the journal holds every change) and is retried
     * after the next change.
     */
    private void compactIfDue() {
        if (journal.bytes() < Math.max(MIN_COMPACT_BYTES, snapshotBytes) || !compaction.isDone()) return;
        byte[] snapshot;
        Journal next;
        try {
            snapshot = saver.save().getBytes(StandardCharsets.UTF_8);
            next = Journal.create(nextFile, snapshot);
            StateFile.syncDirectory(nextFile.getParent());
        } catch (IOException | ControlException e) {
            LOG.log(System.Logger.Level.WARNING, "server.state " + state.path() + ": cannot start a compaction, the journal goes on: " + e);
            return;
        }
        Journal previous = journal;
        journal = next;
        snapshotBytes = snapshot.length;
        try {
            previous.close();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "server.state " + state.path() + ": closing the journal: " + e);
        }
        compaction = compactor.submit(() -> {
            try {
                writeSnapshot(snapshot);
                Files.move(nextFile, journalFile, StandardCopyOption.ATOMIC_MOVE);
                StateFile.syncDirectory(journalFile.getParent());
            } catch (IOException | RuntimeException e) {
                broken = true;
                LOG.log(System.Logger.Level.WARNING, "server.state " + state.path() + ": compaction failed, the next change saves a whole snapshot: " + e);
            }
        });
    }

    /** Keeps the current snapshot as NAME.prev (a hard link: no copy), then replaces it. */
    private void writeSnapshot(byte[] snapshot) throws IOException {
        if (Files.exists(state.path())) {
            Files.deleteIfExists(previousFile);
            Files.createLink(previousFile, state.path());
        }
        state.write(snapshot);
    }

    private void awaitCompaction() {
        try {
            compaction.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException("the compaction task catches its own failures", e);
        }
    }

    /** Every path is the tree's own: the journal names a change as the endpoint asked for it. */
    @Override
    public Target resolve(String path) {
        return new Target(tree, path);
    }

    @Override
    protected void change(Change change, String op, String... args) throws ControlException {
        lock.lock();
        try {
            change.run();
            try {
                if (broken || hostGroupsMade) compactNow();
                else journal.append(op, args);
            } catch (IOException | ControlException e) {
                broken = true;
                throw new ControlException(Errno.EIO, "applied, but the state file " + state.path() + " could not be written: " + e.getMessage()
                                                      + " (the next change saves the whole state)");
            }
            compactIfDue();
        } finally {
            lock.unlock();
        }
    }

    /** Waits for a compaction in flight, so that the files are left as a restart expects. */
    @Override
    public void close() {
        lock.lock();
        try {
            awaitCompaction();
            compactor.shutdown();
            compactor.awaitTermination(1, TimeUnit.MINUTES);
            if (journal != null) journal.close();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "server.state " + state.path() + ": closing the journal: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }
}
