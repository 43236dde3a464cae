# Sourced by every script: finds a JDK 25 and Maven, and sets quiet, reproducible options.
# The machines' default java is 17, so JAVA_HOME is chosen here, never taken from PATH.

find_jdk25() {
  for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25* /usr/lib/jvm/java-25* /usr/lib/jvm/jdk-25*; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] || continue
    # The JDK's release file names its version without starting a JVM (~100 ms each CLI command).
    if [ -f "$candidate/release" ]; then
      local line
      while IFS= read -r line; do
        case "$line" in JAVA_VERSION=\"25*) echo "$candidate"; return 0 ;; esac
      done < "$candidate/release"
      continue
    fi
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

# The server's jar (shaded: every module and library), and build_jar, which builds it when it is
# missing or older than a main source, resource or pom; Maven's output shows only on failure.
IOTARGET_JAR="$IOTARGET_HOME/control/target/iotarget.jar"
build_jar() {
  local jar="$IOTARGET_JAR" here="$IOTARGET_HOME" log
  if jar_is_current "$jar"; then
    return 0
  fi
  echo "iotarget: building (first run, or sources changed)..." >&2
  log="$(mktemp)"
  mvn_run package -DskipTests -pl control -am > "$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
}

# True when JAR exists and no pom, nor anything under a module's src/main (a file, or a directory
# whose entries changed), is newer. Bash's own tests, no find: it runs before every CLI command.
jar_is_current() {
  local jar="$1" f restore
  [ -f "$jar" ] || return 1
  restore="$(shopt -p globstar nullglob)"
  shopt -s globstar nullglob
  for f in "$IOTARGET_HOME"/pom.xml "$IOTARGET_HOME"/*/pom.xml "$IOTARGET_HOME"/*/src/main/**; do
    if [[ "$f" -nt "$jar" ]]; then
      eval "$restore"
      return 1
    fi
  done
  eval "$restore"
  return 0
}
