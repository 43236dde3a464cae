package io.iotarget.backend.file;

import io.iotarget.backend.Backend;
import io.iotarget.backend.Completion;
import io.iotarget.model.IoRequest;

/**
 * Requests waiting for an IO thread or a ring slot, oldest first, each with its backend and
 * completion: three parallel ring arrays that grow by doubling, so that waiting allocates
 * nothing once they have grown. Not thread-safe: its owner guards it with a lock.
 */
final class RequestFifo {
    private Backend[] backends = new Backend[64];
    private IoRequest[] requests = new IoRequest[64];
    private Completion[] completions = new Completion[64];
    private int head;
    private int size;

    int size() {
        return size;
    }

    void add(Backend backend, IoRequest io, Completion done) {
        if (size == requests.length) grow();
        int tail = (head + size) % requests.length;
        backends[tail] = backend;
        requests[tail] = io;
        completions[tail] = done;
        size++;
    }

    /** The oldest entry's backend; with {@link #request()} and {@link #completion()}, read before {@link #remove()}. */
    Backend backend() {
        return backends[head];
    }

    IoRequest request() {
        return requests[head];
    }

    Completion completion() {
        return completions[head];
    }

    /** Drops the oldest entry; the FIFO must not be empty. */
    void remove() {
        backends[head] = null;
        requests[head] = null;
        completions[head] = null;
        head = (head + 1) % requests.length;
        size--;
    }

    private void grow() {
        int n = requests.length;
        Backend[] b = new Backend[n * 2];
        IoRequest[] r = new IoRequest[n * 2];
        Completion[] c = new Completion[n * 2];
        for (int i = 0; i < n; i++) {
            int from = (head + i) % n;
            b[i] = backends[from];
            r[i] = requests[from];
            c[i] = completions[from];
        }
        backends = b;
        requests = r;
        completions = c;
        head = 0;
    }
}
