#!/usr/bin/env python3
"""tests/checks/check_docs.py: the README is the front door; what it and the folder
READMEs say about the tree is checked against the tree.

usage: check_docs.py SOURCE_DIR CASE

  front_door  README.md is at most 250 lines, and its quick start is exactly
              the two set-up commands (scripts/run, scripts/test), the second
              being what .ci/run calls
  links       every relative link in the project's Markdown files (not under
              build*/, .venv/, .bundle/) names a file or folder that exists,
              and every #anchor a heading of that file
  recipes     each "Where to add" recipe of README.md holds for the tree: the
              paths it names exist; a folder it says CMake globs is globbed
              (and no file in it is listed by hand); what it says is one file
              or one declaration is named nowhere else (a switch's
              declaration, a format's reporter, a step metric's key in the
              report builder); each micro-benchmark family is one file in
              the list bench/micro/CMakeLists.txt builds

Standard-library Python. Exit 0 when the case holds, 1 with each problem
printed (file, what it says, what the tree has), 2 bad usage.
"""
import pathlib
import re
import sys

MAX_README_LINES = 250
SKIP_DIRS = {".git", ".venv", ".bundle", "node_modules"}


def markdown_files(root):
    for p in sorted(root.rglob("*.md")):
        parts = p.relative_to(root).parts
        if any(part in SKIP_DIRS or part.startswith("build") for part in parts):
            continue
        yield p


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"^#{1,6} +(.*?) *#*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def front_door(root):
    problems = []
    readme = (root / "README.md").read_text()
    lines = readme.count("\n")
    if lines > MAX_README_LINES:
        problems.append(f"README.md: {lines} lines; the front door is at most {MAX_README_LINES} (detail goes to "
                        "the folder READMEs)")
    m = re.search(r"^## Quick start\n(.*?)^## ", readme, re.M | re.S)
    block = re.search(r"```sh\n(.*?)```", m.group(1), re.S) if m else None
    commands = [l.split("#")[0].strip() for l in block.group(1).splitlines() if l.strip()] if block else []
    if commands != ["scripts/run", "scripts/test"]:
        problems.append(f"README.md, Quick start: the set-up commands are {commands}; expected exactly "
                        "['scripts/run', 'scripts/test']")
    ci = (root / ".ci" / "run").read_text()
    if not re.search(r"^\s*(exec\s+)?(\"?\$\w+\"?/)?scripts/test\b", ci, re.M):
        problems.append(".ci/run does not call scripts/test, the README's test command")
    return problems


def links(root):
    problems = []
    for md in markdown_files(root):
        text = re.sub(r"```.*?```", "", md.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto
            path, _, anchor = target.partition("#")
            dest = (md.parent / path).resolve() if path else md
            if not dest.exists():
                problems.append(f"{md.relative_to(root)}: link ({target}): {path} does not exist")
            elif anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{md.relative_to(root)}: link ({target}): no heading of "
                                f"{dest.relative_to(root)} has the anchor #{anchor}")
    return problems


def recipes_section(root):
    readme = (root / "README.md").read_text()
    m = re.search(r"^### Where to add\n(.*?)(?=^#|\Z)", readme, re.M | re.S)
    if not m:
        return None
    return {b[0]: " ".join(b[1].split()) for b in re.findall(r"^- \*\*(.+?)\*\*[^:]*:(.*?)(?=^- |\Z)", m.group(1), re.M | re.S)}


def sources(root, folders=("bench", "profiler", "reports", "variants", "tests")):
    for folder in folders:
        for p in (root / folder).rglob("*"):
            if p.suffix in (".cpp", ".h", ".cu", ".cuh", ".py") and "fixtures" not in p.parts:
                yield p


def globbed(root, folder):
    """(globbed, files listed by hand) for a folder of sources in CMakeLists.txt."""
    cmake = (root / "CMakeLists.txt").read_text()
    call = re.search(rf"ladder_declared_files\(\w+ {re.escape(folder)}\b([^)]*)\)", cmake)
    listed = re.findall(rf"^\s*{re.escape(folder)}/(\w+\.cpp)\s*$", cmake, re.M)
    excluded = re.findall(r"EXCLUDE ((?:\w+\.cpp ?)+)", call.group(1))[0].split() if call and "EXCLUDE" in call.group(1) \
        else []
    return bool(call), [f for f in listed if f not in excluded]  # a file the glob leaves out is no item


def one_file_per_item(root, folder, pattern, what):
    """Each <folder>/<name>.cpp's item (pattern with {name}) named by no other source."""
    problems = []
    others = [(p, p.read_text(errors="ignore")) for p in sources(root) if p.parent != root / folder]
    for f in sorted((root / folder).glob("*.cpp")):
        name = pattern.format(name=f.stem)
        for p, text in others:
            if re.search(rf"\b{re.escape(name)}\b", text):
                problems.append(f"{p.relative_to(root)} names {name}: {what} should be its one file, "
                                f"{f.relative_to(root)}")
    return problems


def beside_ops(root, suffix):
    """The <name><suffix>.cpp files beside an op (variants/<room>/, variants/ops/<op>/), by <name>: the
    places CMake globs for a switch (_switch) or a micro-benchmark family (_micro)."""
    variants = root / "variants"
    found = list(variants.glob(f"*/*{suffix}.cpp")) + list((variants / "ops").glob(f"*/*{suffix}.cpp"))
    return {f.stem.removesuffix(suffix): f for f in found}


def switch_files(root):
    """The files that declare a switch: variants/switches/<name>.cpp (but the plan, registry.cpp), and
    <name>_switch.cpp beside the mechanism it turns on (variants/<room>/, variants/ops/<op>/)."""
    own = {f.stem: f for f in (root / "variants" / "switches").glob("*.cpp") if f.name != "registry.cpp"}
    return {**own, **beside_ops(root, "_switch")}


def no_switch_list(root):
    """A switch is declared by its one file (switch_files): no other source declares one, and none names
    every switch (a list kept by hand, which a new switch would have to join). Code names a switch by its
    symbol (switches::<name>) where its mechanism reads it: that is the point of the symbol."""
    declared = switch_files(root)
    problems = []
    for name, f in sorted(declared.items()):
        if not re.search(rf"^extern const SwitchDecl {name} =", f.read_text(), re.M):
            problems.append(f"{f.relative_to(root)} should declare the switch {name} "
                            f"(extern const SwitchDecl {name} = ...)")
    names = sorted(declared)
    files = set(declared.values())
    for p in sources(root):
        if p in files:
            continue
        text = p.read_text(errors="ignore")
        if re.search(r"^\s*(extern\s+)?const\s+SwitchDecl\s+\w+\s*=", text, re.M):
            problems.append(f"{p.relative_to(root)} declares a SwitchDecl: a switch's declaration should be its one "
                            "file, variants/switches/<name>.cpp or <name>_switch.cpp beside its mechanism")
        named = {n for n in names if re.search(rf"\bswitches::{n}\b", text)}
        if names and len(named) == len(names):
            problems.append(f"{p.relative_to(root)} names every switch ({len(names)}): a list kept by hand, which "
                            "a new switch would have to join")
    return problems


def check_glob_claim(root, title, text, folder):
    problems = []
    if "CMake globs the folder" not in text:
        return [f"README.md, Where to add, {title}: expected to say that CMake globs {folder}/"]
    is_globbed, listed = globbed(root, folder)
    if not is_globbed:
        problems.append(f"README.md, Where to add, {title}: says CMake globs {folder}/, but CMakeLists.txt has no "
                        f"ladder_declared_files(... {folder} ...)")
    if listed:
        problems.append(f"CMakeLists.txt lists {folder}/ files by hand ({', '.join(listed)}), which the recipe "
                        "says are globbed")
    return problems


def step_metric_keys(root):
    text = (root / "bench/measure/harness/step_metrics.cpp").read_text()
    return re.findall(r'^\s*\{"([a-z_]+)",', text, re.M)


# Per-rank figures the ddp section makes itself under a metric's name: this rank's own tokens over
# its own step times (the declared metric divides the run's tokens/s by the ranks), and the rank's
# peaks over the whole run from its memory monitor (the declared metrics are each step's).
OWN_PER_RANK = {"tokens_per_s_per_device", "peak_rss_bytes", "peak_reserved_bytes", "peak_allocated_bytes"}


def recipes(root):
    found = recipes_section(root)
    if found is None:
        return ["README.md: no '### Where to add' section"]
    problems = []
    for title, text in found.items():
        for path in re.findall(r"`([\w./<>-]+/[\w./<>-]*)`", text):
            concrete = path.split("<")[0] if "<" in path else path
            if not (root / concrete).exists():
                problems.append(f"README.md, Where to add, {title}: {path}: {concrete} does not exist")
    wanted = {"A switch": ("variants/switches", None, None),
              "An output format": ("reports/formats", "{name}_reporter", "a format's reporter")}
    for title, (folder, pattern, what) in wanted.items():
        if title not in found:
            problems.append(f"README.md, Where to add: no recipe '{title}'")
            continue
        problems += check_glob_claim(root, title, found[title], folder)
        problems += one_file_per_item(root, folder, pattern, what) if pattern else no_switch_list(root)
    # A step metric: one declaration; the report builder lists none of the keys.
    # (the ranks' figures are gathered in measure.cpp, the ddp section built in rung_report.cpp's ddp_section)
    measure = (root / "bench" / "measure" / "measure.cpp").read_text()
    builder = re.search(r"^std::optional<DdpSection> ddp_section\(.*?^}", (root / "bench/measure/report/rung_report.cpp").read_text(),
                        re.M | re.S)
    if not builder:
        problems.append("bench/measure/report/rung_report.cpp: no ddp_section, which builds the ddp section")
    for where, text in (("bench/measure/measure.cpp", measure),
                        ("bench/measure/report/rung_report.cpp ddp_section", builder.group(0) if builder else "")):
        for key in step_metric_keys(root):
            if key not in OWN_PER_RANK and re.search(rf'"{key}"', text):
                problems.append(f"{where} names the step metric \"{key}\": the metric is one declaration in "
                                "bench/measure/harness/step_metrics.cpp (its RankScope says what the ddp section keeps)")
    # A micro-benchmark: one file per family, bench/micro/<name>.cpp or <name>_micro.cpp beside its op,
    # defining <name>_family; the build globs both, and no source lists the families by hand.
    micro = root / "bench" / "micro"
    support = {"harness", "command", "process_groups", "library_build", "main"}
    family_files = {f.stem: f for f in micro.glob("*.cpp") if f.stem not in support}
    family_files.update(beside_ops(root, "_micro"))
    for name, f in sorted(family_files.items()):
        if not re.search(rf"^extern const Family {name}_family\{{", f.read_text(), re.M):
            problems.append(f"{f.relative_to(root)} should define its family, extern const Family {name}_family")
    for p in sources(root):
        listed = set(re.findall(r"&(\w+)_family\b", p.read_text(errors="ignore"))) & set(family_files)
        if len(family_files) > 1 and len(listed) == len(family_files):
            problems.append(f"{p.relative_to(root)} lists every micro-benchmark family: the build generates the list")
    cmake = (micro / "CMakeLists.txt").read_text()
    if not re.search(r"ladder_declared_files\(\w+ bench/micro\b[^)]*ALSO _micro", cmake):
        problems.append("bench/micro/CMakeLists.txt: expected ladder_declared_files(... bench/micro ... ALSO _micro "
                        "...), the glob of the families")
    recipe = found.get("A micro-benchmark", "")
    for place in ("<name>_micro.cpp", "CMake globs", "all_families()"):
        if place not in recipe:
            problems.append(f"README.md, Where to add, A micro-benchmark: should name {place}")
    return problems


CASES = {"front_door": front_door, "links": links, "recipes": recipes}


def main(argv):
    if len(argv) != 3 or argv[2] not in CASES:
        print(f"usage: check_docs.py SOURCE_DIR {{{'|'.join(CASES)}}}", file=sys.stderr)
        return 2
    problems = CASES[argv[2]](pathlib.Path(argv[1]).resolve())
    for p in problems:
        print(p)
    print(f"check_docs {argv[2]}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
