package io.iotarget.testkit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * How a guest script asks its test to act on the host (kill a node, start one, read the store):
 * {@code echo COMMAND | nc 10.0.2.2 PORT} in the guest, one command a connection, one answer
 * line back. The test answers on one virtual thread, a connection at a time, so the commands
 * run in the order the script sends them; an exception is answered as {@code ERR ...} (and
 * printed), which the script's checks then show. Loopback only: the guest reaches the host's
 * 127.0.0.1 as 10.0.2.2.
 */
public final class GuestChannel implements AutoCloseable {
    /** Answers one command line, split on white space; what it returns is sent as one line ("null" for null). */
    @FunctionalInterface
    public interface Commands {
        String answer(String[] words) throws Exception;
    }

    private final ServerSocket socket;

    private GuestChannel(ServerSocket socket) {
        this.socket = socket;
    }

    /** Listens on an ephemeral loopback port and answers with {@code commands} until closed. */
    public static GuestChannel open(String name, Commands commands) throws IOException {
        GuestChannel channel = new GuestChannel(new ServerSocket(0, 16, InetAddress.getLoopbackAddress()));
        Thread.ofVirtual().name(name).start(() -> channel.serve(commands));
        return channel;
    }

    /** The port the guest script connects to (its {@code CTL_PORT}). */
    public int port() {
        return socket.getLocalPort();
    }

    private void serve(Commands commands) {
        while (!socket.isClosed()) {
            try (Socket s = socket.accept()) {
                String line = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8)).readLine();
                String answer;
                try {
                    answer = commands.answer(line == null ? new String[]{""} : line.strip().split("\\s+"));
                } catch (Exception | AssertionError e) {          // a failed check of the test's: the script shows it
                    answer = "ERR " + e;
                    System.out.println("[guest channel] " + line + ": " + e);
                }
                s.getOutputStream().write((String.valueOf(answer).replace('\n', ' ') + "\n").getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                // the guest went away mid-command: the next connection
            }
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
