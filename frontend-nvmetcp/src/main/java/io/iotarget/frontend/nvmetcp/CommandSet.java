package io.iotarget.frontend.nvmetcp;

import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.config.Port;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.ServiceLoader;

/**
 * The commands as the core calls them (nvmet's {@code nvmet_parse_connect_cmd},
 * {@code nvmet_parse_admin_cmd}, {@code nvmet_parse_io_cmd}): the submission queue routes each
 * command here once it passed the authentication gate; the commands take the core's
 * {@link Controller}, {@link Queue} and {@link CommandSlot}. The core names only this
 * interface, so the commands depend on the core and not the other way round. Implemented by
 * package {@code command}, found once through {@link ServiceLoader}
 * ({@code META-INF/services/io.iotarget.frontend.nvmetcp.CommandSet}).
 *
 * <p>Each method runs on the queue's event loop, as the command's contract in package
 * {@code command} says; a status, or {@link Queue#PENDING} for a command answered later.
 */
public interface CommandSet {
    /** Refuses before its data is read what cannot be a Connect: the only command of a queue without a controller. */
    int precheckConnect(CommandSlot slot);

    /** Runs a Connect, which makes or joins a controller ({@link Queue#connected}). */
    int connect(Queue queue, CommandSlot slot);

    /** Refuses an admin command before its data is asked for. */
    int precheckAdmin(Controller c, CommandSlot slot);

    /** Runs an admin command inline. */
    int executeAdmin(Controller c, Queue queue, CommandSlot slot);

    /** The IO commands of one queue (made with the connection, before Connect). */
    IoQueue ioQueue(Engine engine, Queue queue);

    /** The discovery log page with {@code nqns} (the first is the current discovery subsystem) as {@code port} reaches them. Lock held. */
    ByteBuffer discoveryLog(long generation, Port port, List<String> nqns);

    /** One queue's IO commands. Its event loop only. */
    interface IoQueue {
        /** Refuses before any data is asked for. */
        int precheck(Controller c, CommandSlot slot);

        /** Runs the command: a status, or {@link Queue#PENDING} once it is on the engine. */
        int execute(Controller c, CommandSlot slot);
    }

    /** The one command set on the class path. */
    static CommandSet load() {
        return ServiceLoader.load(CommandSet.class, CommandSet.class.getClassLoader()).findFirst()
                .orElseThrow(() -> new IllegalStateException("no NVMe command set on the class path"
                                                             + " (META-INF/services/" + CommandSet.class.getName() + ")"));
    }
}
