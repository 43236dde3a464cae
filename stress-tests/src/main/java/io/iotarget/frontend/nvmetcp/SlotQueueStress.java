package io.iotarget.frontend.nvmetcp;

/** What the SlotQueue stress tests share: draining a queue as the loop does. */
final class SlotQueueStress {
    private SlotQueueStress() {
    }

    /** Polls until the queue answers null; the tags polled, space-separated, or "-" for none. */
    static String pollAll(SlotQueue queue) {
        StringBuilder tags = new StringBuilder();
        for (CommandSlot s; (s = queue.poll()) != null; ) {
            if (!tags.isEmpty()) tags.append(' ');
            tags.append(s.tag);
        }
        return tags.isEmpty() ? "-" : tags.toString();
    }
}
