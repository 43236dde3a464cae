package io.iotarget.frontend.nvmetcp.command;

import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.CommandSet;
import io.iotarget.frontend.nvmetcp.CommandSlot;
import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.Queue;
import io.iotarget.frontend.nvmetcp.config.Port;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * This package as the core's {@link CommandSet}: Connect ({@link Fabrics}), the admin commands
 * ({@link AdminCommands}) and each queue's IO commands ({@link IoCommands}). Registered in
 * {@code META-INF/services}; stateless, any thread.
 */
public final class NvmeCommands implements CommandSet {
    /** For {@link java.util.ServiceLoader}. */
    public NvmeCommands() {
    }

    @Override
    public int precheckConnect(CommandSlot slot) {
        return Fabrics.precheckConnect(slot);
    }

    @Override
    public int connect(Queue queue, CommandSlot slot) {
        return Fabrics.connect(queue, slot);
    }

    @Override
    public int precheckAdmin(Controller c, CommandSlot slot) {
        return AdminCommands.precheck(c, slot);
    }

    @Override
    public int executeAdmin(Controller c, Queue queue, CommandSlot slot) {
        return AdminCommands.execute(c, queue, slot);
    }

    @Override
    public IoQueue ioQueue(Engine engine, Queue queue) {
        return new IoCommands(engine, queue);
    }

    @Override
    public ByteBuffer discoveryLog(long generation, Port port, List<String> nqns) {
        return LogPages.discoveryLog(generation, port, nqns);
    }
}
