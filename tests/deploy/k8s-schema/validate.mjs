// Validates Kubernetes objects (a multi-document YAML file, as `kubectl kustomize` renders it)
// against the API schemas of kubernetes-models and, for the ServiceMonitor,
// @kubernetes-models/prometheus-operator: wrong types, values outside an enum, missing
// required fields, and fields the schema does not declare (`replica:` for `replicas:`), which
// the API server drops with only a warning. An object whose kind has no schema here fails too,
// so a new kind is not skipped silently.
//   node validate.mjs RENDERED.yaml
// Prints one line per object, "ok KIND NAME" or "INVALID KIND NAME: MESSAGE; MESSAGE..." where a
// message is "data/PATH must be ..." (schema) or "PATH is not a field of TYPE" (unknown field);
// exits 1 when any object is invalid or the file holds none.
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

// Unknown fields. The packages ship each schema definition compiled to an ajv validator, one
// module per definition (_schemas/IoK8sApiCoreV1Container.mjs, ...), not as JSON: there are no
// `properties` to read. But a compiled validator reads every property its schema declares
// (`data.readinessProbe === undefined || ...`) and enumerates the keys of a map
// (`additionalProperties`: labels, annotations, ConfigMap data, resource quantities). So the
// object is validated through proxies that record, per object, which keys the schema modules
// read and whether they enumerated it; a key nobody read is not a field of that type. An object
// the validators never touched is free-form (`x-kubernetes-preserve-unknown-fields`, a schema
// without properties) and nothing below it is checked. The reader is the first stack frame
// outside this file; its module names the definition, hence the type in the message (a CRD's
// nested objects are inline in one definition: their type is the kind, e.g. ServiceMonitor).
// Not covered: a schema declaring both properties and x-kubernetes-preserve-unknown-fields
// (none in the kinds deploy/k8s uses) would report its extra keys.
const maxDepth = 64;
const maxUnknown = 20;
const schemaModule = /\/_schemas\/(\w+)\.m?js$/;

// The definition whose validator is reading (called from a proxy trap), or undefined when the
// reader is not a schema module (the error formatter, this file).
function readingDefinition() {
    const { prepareStackTrace, stackTraceLimit } = Error;
    Error.stackTraceLimit = 8;
    Error.prepareStackTrace = (_, frames) => frames;
    const frames = new Error().stack;
    Error.prepareStackTrace = prepareStackTrace;
    Error.stackTraceLimit = stackTraceLimit;
    // The first frame outside this file is the reader (the ones above it are the proxy trap).
    const reader = frames.find((frame) => frame.getFileName() !== import.meta.url);
    return reader?.getFileName()?.match(schemaModule)?.[1];
}

// IoK8sApiCoreV1Container -> Container, MonitoringCoreosComV1ServiceMonitor -> ServiceMonitor.
function typeName(definition) {
    return definition.replace(/^.*?V\d+(?:(?:alpha|beta)\d+)?(?=[A-Z])/, "");
}

function recordingProxies() {
    const reads = new WeakMap(); // object -> { type, keys: Set, map: bool }
    const proxies = new WeakMap();
    const record = (target) => {
        const definition = readingDefinition();
        if (!definition) return undefined;
        let entry = reads.get(target);
        if (!entry) reads.set(target, (entry = { type: typeName(definition), keys: new Set(), map: false }));
        return entry;
    };
    const handler = {
        get(target, key, receiver) {
            if (typeof key === "string") record(target)?.keys.add(key);
            return wrap(Reflect.get(target, key, receiver));
        },
        has(target, key) {
            if (typeof key === "string") record(target)?.keys.add(key);
            return Reflect.has(target, key);
        },
        ownKeys(target) {
            const entry = record(target);
            if (entry) entry.map = true;
            return Reflect.ownKeys(target);
        },
    };
    const wrap = (value) => {
        if (value === null || typeof value !== "object") return value;
        let proxy = proxies.get(value);
        if (!proxy) proxies.set(value, (proxy = new Proxy(value, handler)));
        return proxy;
    };
    return { reads, wrap };
}

// "PATH is not a field of TYPE" for every key of VALUE (and below) that no validator read.
function unknownFields(value, reads, path, depth, out) {
    if (out.length > maxUnknown) return;
    if (depth > maxDepth) {
        out.push(`${path} is nested deeper than ${maxDepth} levels`);
        return;
    }
    if (Array.isArray(value)) {
        value.forEach((item, i) => unknownFields(item, reads, `${path}/${i}`, depth + 1, out));
        return;
    }
    if (value === null || typeof value !== "object") return;
    const entry = reads.get(value);
    if (!entry) return; // free-form: no schema below here
    for (const key of Object.keys(value)) {
        const child = path === "" ? key : `${path}/${key}`;
        if (entry.map || entry.keys.has(key)) unknownFields(value[key], reads, child, depth + 1, out);
        else out.push(`${child} is not a field of ${entry.type}`);
    }
}

// Schema errors and unknown fields of OBJECT as messages; none when it is valid.
function check(Model, object) {
    const model = new Model(object);
    const { reads, wrap } = recordingProxies();
    const messages = [];
    try {
        // validate() runs the compiled validator on `this`: here the recording proxy.
        Model.prototype.validate.call(wrap(model));
    } catch (error) {
        // The validator's message names every failing path, e.g.
        // "data/spec/replicas must be integer".
        messages.push(String(error.message ?? error).replaceAll("\n", "; "));
    }
    const unknown = [];
    unknownFields(model, reads, "", 0, unknown);
    if (unknown.length > maxUnknown) unknown.splice(maxUnknown, Infinity, "more unknown fields left out");
    return messages.concat(unknown);
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
    const messages = check(Model, object);
    if (messages.length === 0) {
        console.log(`ok ${label}`);
    } else {
        console.log(`INVALID ${label}: ${messages.join("; ")}`);
        ++invalid;
    }
}
if (objects === 0) {
    console.log("INVALID: no objects");
    process.exit(1);
}
console.log(`${objects} objects, ${invalid} invalid`);
process.exit(invalid === 0 ? 0 : 1);
