package io.iotarget.frontend.nbd;

/** What the FinishedCommands stress tests share: commands told apart by cookie, and a drain as the loop does it. */
final class FinishedCommandsStress {
    private FinishedCommandsStress() {
    }

    static Command command(long cookie) {
        Command c = new Command(sent -> { });
        c.cookie = cookie;
        return c;
    }

    /** The cookies drained, oldest first and space-separated, or "-" for none; at most 8, so that a cycle ends. */
    static String drain(FinishedCommands finished) {
        StringBuilder cookies = new StringBuilder();
        int n = 0;
        for (Command c = finished.drain(); c != null && n < 8; c = c.next, n++) {
            if (!cookies.isEmpty()) cookies.append(' ');
            cookies.append(c.cookie);
        }
        return cookies.isEmpty() ? "-" : cookies.toString();
    }
}
