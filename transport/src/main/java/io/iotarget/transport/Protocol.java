package io.iotarget.transport;

/** Makes the handler of each connection a {@link Listener} accepts. Runs on the connection's loop. */
public interface Protocol {
    /** The handler of a newly accepted connection. */
    ConnectionHandler open(Connection connection);

    /**
     * The connection is over a limit ({@code reason} says which, for the client): a handler
     * that tells the client so in the protocol's own terms, or null to close the socket at once.
     */
    default ConnectionHandler refuse(Connection connection, String reason) {
        return null;
    }
}
