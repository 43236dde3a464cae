package io.iotarget.model.tree;

import java.util.ArrayList;
import java.util.List;

/**
 * The attribute table of one kind of directory: its attributes in listing order, which is the
 * order a listing replays them in (so {@code enable} goes last). Immutable; any thread.
 */
public final class Attributes<T> {
    private final List<Attribute<T>> attributes;

    private Attributes(List<Attribute<T>> attributes) {
        this.attributes = attributes;
    }

    public static <T> Attributes<T> of(List<Attribute<T>> attributes) {
        return new Attributes<>(List.copyOf(attributes));
    }

    /** The attribute called {@code name}, or null. */
    public Attribute<T> find(String name) {
        for (Attribute<T> a : attributes) if (a.name().equals(name)) return a;
        return null;
    }

    /** Names in listing order. */
    public List<String> names() {
        List<String> names = new ArrayList<>(attributes.size());
        for (Attribute<T> a : attributes) names.add(a.name());
        return names;
    }
}
