package io.iotarget.iocontrol;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Coverage-guided fuzz target for {@link HostGroupName#of}, the per-host group name (issue 29):
 * for any two identities (any kind, any bytes) each name is a group name mkdir would take (not
 * empty, not {@code .} or {@code ..}, at most 255 bytes of the allowed characters), a short name
 * decodes back to its identity (so no two identities share one), and two different identities
 * get different names.
 */
class HostGroupNameFuzzTest {
    @FuzzTest
    void namesAreValidNeverEmptyAndInjective(FuzzedDataProvider data) {
        HostIdentity first = identity(data, data.consumeInt(0, 600));
        HostIdentity second = identity(data, 600);
        String a = checkedName(first);
        String b = checkedName(second);
        if (first.equals(second)) assertEquals(a, b);
        else assertNotEquals(a, b, "two identities share a name: " + a);
    }

    private static HostIdentity identity(FuzzedDataProvider data, int maxBytes) {
        HostIdentity.Kind kind = data.pickValue(HostIdentity.Kind.values());
        return HostIdentity.of(kind, data.consumeBytes(maxBytes));
    }

    private static String checkedName(HostIdentity id) {
        String name = HostGroupName.of(id);
        assertFalse(name.isEmpty());
        assertFalse(name.equals(".") || name.equals(".."));
        assertTrue(name.length() <= HostGroupName.MAX_NAME_BYTES, name);
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            assertTrue((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || "-_.@+:=,".indexOf(c) >= 0, name);
        }
        assertTrue(name.startsWith(id.kind().label() + ":") || name.startsWith(id.kind().label() + HostGroupName.HASHED_SUFFIX + ":"), name);
        HostIdentity back = HostGroupName.decode(name);
        if (name.startsWith(id.kind().label() + ":")) assertEquals(id, back, "decodes back: " + name);
        else assertNull(back, "a hashed name is not decoded");
        return name;
    }
}
