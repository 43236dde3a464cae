package io.iotarget.frontend.nbd;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A connection's commands that finished and wait for the loop to queue their replies: a
 * lock-free stack linked through {@link Command#next} (pushing allocates nothing), and the flag
 * that keeps one flush task at most scheduled for it.
 *
 * <p>The wake-up: a finisher pushes, then {@link #armFlush} — only the one that raises the flag
 * schedules the flush task; the task calls {@link #flushStarting} (lowering it) before it
 * {@link #drain}s. A push the drain missed came after the flag went down, so its finisher raises
 * it again and schedules the next task. Every access is volatile, so "lower the flag, then take
 * the stack" against "push, then read the flag" always has one side see the other's write
 * (stress-tests' {@code FinishedCommandsFlushStress} holds it to this).
 *
 * <p>Threads: {@link #push} and {@link #armFlush} from any thread; the rest on the loop.
 */
final class FinishedCommands {
    private final AtomicReference<Command> top = new AtomicReference<>();
    private final AtomicBoolean flushArmed = new AtomicBoolean();

    /** Any thread: the command is done and its reply may be queued. */
    void push(Command c) {
        Command head;
        do {
            head = top.get();
            c.next = head;
        } while (!top.compareAndSet(head, c));
    }

    /** Any thread, after {@link #push}: true when the caller is to schedule the flush task (none is pending). */
    boolean armFlush() {
        return flushArmed.compareAndSet(false, true);
    }

    /** Loop thread, at the start of the flush task, before it drains: pushes from now on arm a new one. */
    void flushStarting() {
        flushArmed.set(false);
    }

    /** Loop thread: every command pushed so far, oldest first, linked through {@link Command#next}; null when none. */
    Command drain() {
        Command list = top.getAndSet(null);
        Command oldestFirst = null;
        while (list != null) {
            Command next = list.next;
            list.next = oldestFirst;
            oldestFirst = list;
            list = next;
        }
        return oldestFirst;
    }
}
