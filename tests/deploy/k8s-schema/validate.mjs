// Validates Kubernetes objects (a multi-document YAML file, as `kubectl kustomize` renders it)
// against the API schemas of kubernetes-models and, for the ServiceMonitor,
// @kubernetes-models/prometheus-operator: wrong types, values outside an enum, missing
// required fields. An object whose kind has no schema here fails too, so a new kind is not
// skipped silently. (Unknown fields are not caught: the schemas allow them, as the API server
// does without strict field validation.)
//   node validate.mjs RENDERED.yaml
// Prints one line per object, "ok KIND NAME" or "INVALID KIND NAME: PATH MESSAGE"; exits 1 when
// any object is invalid or the file holds none.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

// apiVersion -> the module folder holding one model class per kind.
function modulePath(apiVersion) {
    if (apiVersion === "v1") return "kubernetes-models/v1";
    if (apiVersion.startsWith("monitoring.coreos.com/")) return `@kubernetes-models/prometheus-operator/${apiVersion}`;
    return `kubernetes-models/${apiVersion}`;
}

async function modelOf(apiVersion, kind) {
    try {
        const module = await import(`${modulePath(apiVersion)}/${kind}`);
        return module[kind];
    } catch {
        return undefined;
    }
}

const file = process.argv[2];
if (!file) {
    console.error("usage: node validate.mjs RENDERED.yaml");
    process.exit(2);
}
const docs = parseAllDocuments(readFileSync(file, "utf8"));
let objects = 0;
let invalid = 0;
for (const doc of docs) {
    if (doc.errors.length > 0) {
        console.log(`INVALID YAML: ${doc.errors[0].message}`);
        ++invalid;
        continue;
    }
    const object = doc.toJS();
    if (object === null || object === undefined) continue;
    ++objects;
    const { apiVersion = "?", kind = "?" } = object;
    const label = `${kind} ${object.metadata?.name ?? "?"}`;
    const Model = await modelOf(apiVersion, kind);
    if (!Model) {
        console.log(`INVALID ${label}: no schema for ${apiVersion} ${kind}`);
        ++invalid;
        continue;
    }
    try {
        new Model(object).validate();
        console.log(`ok ${label}`);
    } catch (error) {
        // The validator's message names every failing path, e.g.
        // "data/spec/replicas must be integer".
        console.log(`INVALID ${label}: ${String(error.message ?? error).replaceAll("\n", "; ")}`);
        ++invalid;
    }
}
if (objects === 0) {
    console.log("INVALID: no objects");
    process.exit(1);
}
console.log(`${objects} objects, ${invalid} invalid`);
process.exit(invalid === 0 ? 0 : 1);
