package io.iotarget.model;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The counters of one catalogue ({@code E}), read through one API: {@link #counter} for one,
 * {@link #snapshot} for all. Each entry is either counted here ({@link #increment}, a LongAdder,
 * so writers on many threads do not contend) or read from where its owner keeps it (a queue
 * depth, a count kept by a {@link CountedErrorHandler}), given once with {@link #source}.
 *
 * <p>Any thread. As with LongAdder, a snapshot taken while the counters move is not atomic
 * across entries; each value is one that the entry had during the call.
 *
 * @param <E> the catalogue
 */
public final class Counters<E extends Enum<E> & CounterDescriptor> {
    private final Class<E> catalogue;
    private final LongAdder[] counted;
    private final LongSupplier[] sources;

    /** Every entry counted here until a {@link #source} is given for it. */
    public Counters(Class<E> catalogue) {
        this.catalogue = catalogue;
        E[] all = catalogue.getEnumConstants();
        this.counted = new LongAdder[all.length];
        this.sources = new LongSupplier[all.length];
        for (int i = 0; i < all.length; i++) counted[i] = new LongAdder();
    }

    /** Reads {@code entry} from {@code source} from now on; for the owner's constructor. */
    public Counters<E> source(E entry, LongSupplier source) {
        sources[entry.ordinal()] = source;
        return this;
    }

    public void increment(E entry) {
        counted[entry.ordinal()].increment();
    }

    public void add(E entry, long delta) {
        counted[entry.ordinal()].add(delta);
    }

    /** The entry's value now. */
    public long counter(E entry) {
        LongSupplier source = sources[entry.ordinal()];
        return source != null ? source.getAsLong() : counted[entry.ordinal()].sum();
    }

    /** Every entry's value, in catalogue order. */
    public Map<E, Long> snapshot() {
        Map<E, Long> values = new EnumMap<>(catalogue);
        for (E entry : catalogue.getEnumConstants()) values.put(entry, counter(entry));
        return values;
    }

    /**
     * These counters typed as the catalogue they are, for a reader that got them untyped
     * ({@code Counters<?>}, as policies' counters come) and knows what to expect.
     *
     * @throws IllegalArgumentException when they are of another catalogue
     */
    @SuppressWarnings("unchecked")
    public <T extends Enum<T> & CounterDescriptor> Counters<T> as(Class<T> expected) {
        if (expected != catalogue) throw new IllegalArgumentException(catalogue.getSimpleName() + " counters, not " + expected.getSimpleName());
        return (Counters<T>) this;
    }

    /** The catalogue's enum, for readers that list entries. */
    public Class<E> catalogue() {
        return catalogue;
    }
}
