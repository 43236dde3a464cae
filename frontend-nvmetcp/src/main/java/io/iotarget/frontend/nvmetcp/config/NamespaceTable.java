package io.iotarget.frontend.nvmetcp.config;

import java.util.Arrays;
import java.util.Collection;

/**
 * The enabled namespaces of a subsystem, sorted by nsid: an immutable snapshot the
 * configuration thread replaces as a whole, so the IO path finds a namespace with a binary
 * search and no lock or allocation. Any thread.
 */
public final class NamespaceTable {
    static final NamespaceTable EMPTY = new NamespaceTable(new int[0], new ActiveNamespace[0]);

    private final int[] nsids;            // unsigned order
    private final ActiveNamespace[] namespaces;

    private NamespaceTable(int[] nsids, ActiveNamespace[] namespaces) {
        this.nsids = nsids;
        this.namespaces = namespaces;
    }

    static NamespaceTable of(Collection<ActiveNamespace> active) {
        ActiveNamespace[] a = active.toArray(ActiveNamespace[]::new);
        Arrays.sort(a, (x, y) -> Integer.compareUnsigned(x.nsid(), y.nsid()));
        int[] ids = new int[a.length];
        for (int i = 0; i < a.length; i++) ids[i] = a[i].nsid();
        return new NamespaceTable(ids, a);
    }

    /** The enabled namespace with this id, or null. */
    public ActiveNamespace find(int nsid) {
        int lo = 0, hi = nsids.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int c = Integer.compareUnsigned(nsids[mid], nsid);
            if (c == 0) return namespaces[mid];
            if (c < 0) lo = mid + 1;
            else hi = mid - 1;
        }
        return null;
    }

    public int size() {
        return namespaces.length;
    }

    /** The i-th namespace in nsid order. */
    public ActiveNamespace get(int i) {
        return namespaces[i];
    }
}
