# Sourced by every script: finds a JDK 25 and Maven, and sets quiet, reproducible options.
# The machines' default java is 17, so JAVA_HOME is chosen here, never taken from PATH.

find_jdk25() {
  for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25* /usr/lib/jvm/java-25* /usr/lib/jvm/jdk-25*; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] || continue
    if "$candidate/bin/java" -version 2>&1 | grep -q 'version "25'; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

JAVA_HOME="$(find_jdk25)" || {
  echo "iotarget: no JDK 25 found (set JAVA_HOME, or install Temurin 25 under /usr/lib/jvm)" >&2
  exit 1
}
export JAVA_HOME
export PATH="$JAVA_HOME/bin:$PATH"
# Maven's own libraries call sun.misc.Unsafe; keep JDK 25 from warning about it on every run.
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"

IOTARGET_HOME="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export IOTARGET_HOME

# mvn from PATH (Maven 3.8+ is on the machines); MVN_ARGS adds flags such as -o.
mvn_run() {
  command -v mvn >/dev/null || { echo "iotarget: Maven (mvn) not found; install it (apt-get install maven)" >&2; exit 1; }
  mvn -B -q -f "$IOTARGET_HOME/pom.xml" ${MVN_ARGS:-} "$@"
}
