// containerd returns the configs a container and a sandbox were created from as JSON inside the verbose
// status `info` (Go encoding/json of the CRI structs: proto field names in snake_case, zero values left out,
// enums as numbers, int64 as bare numbers). This turns such JSON back into the objects @grpc/proto-loader
// serializes (camelCase names, int64 as strings, enums by name), led by the proto's own descriptors so that
// every field our proto declares survives; keys are matched ignoring case and underscores, so camelCase
// JSON (as other runtimes may emit) is read too.
import type { PackageDefinition } from '@grpc/proto-loader';
import type { ContainerConfig } from '../../gen/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig } from '../../gen/runtime/v1/PodSandboxConfig.js';
import { criPackageDefinition } from './proto.js';

/** The parts of a protobuf DescriptorProto that the conversion reads. */
interface FieldDescriptor {
  name: string;
  label: string;
  type: string;
  typeName: string;
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: MessageDescriptor[];
  enumType: EnumDescriptor[];
  options: { mapEntry?: boolean } | null;
}
interface EnumDescriptor {
  name: string;
  value: { name: string; number: number }[];
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const INT64_TYPES = new Set(['TYPE_INT64', 'TYPE_UINT64', 'TYPE_SINT64', 'TYPE_FIXED64', 'TYPE_SFIXED64']);
const NUMBER_TYPES = new Set([
  'TYPE_INT32',
  'TYPE_UINT32',
  'TYPE_SINT32',
  'TYPE_FIXED32',
  'TYPE_SFIXED32',
  'TYPE_DOUBLE',
  'TYPE_FLOAT',
]);

/**
 * JSON.parse that keeps integers beyond 2^53 exact by reading them as strings (int64 fields such as memory
 * limits may exceed what a double holds).
 */
export function parseJsonLossless(text: string): unknown {
  let out = '';
  let i = 0;
  const num = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      num.lastIndex = i;
      const m = num.exec(text);
      if (!m) throw new SyntaxError(`bad number at offset ${i}`);
      const tok = m[0];
      const isInt = m[1] === undefined && m[2] === undefined;
      out += isInt && !Number.isSafeInteger(Number(tok)) ? `"${tok}"` : tok;
      i += tok.length;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out);
}

const norm = (key: string) => key.replace(/_/g, '').toLowerCase();

/** Converts JSON of the named message type into a proto-loader object, using one package's descriptors. */
export class JsonToProto {
  private readonly fieldIndex = new Map<MessageDescriptor, Map<string, FieldDescriptor>>();

  constructor(private readonly def: PackageDefinition = criPackageDefinition()) {}

  /** The object for `json` as message `fullName` (e.g. 'runtime.v1.ContainerConfig'). */
  message(fullName: string, json: unknown): Record<string, unknown> {
    const desc = this.lookupMessage(fullName);
    if (!desc) throw new Error(`unknown message type ${fullName}`);
    return this.convertMessage(desc, packageOf(fullName), [], json);
  }

  private convertMessage(desc: MessageDescriptor, pkg: string, scope: MessageDescriptor[], json: unknown): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (!isObject(json)) return out;
    const inner = [...scope, desc];
    const index = this.indexOf(desc);
    for (const [key, value] of Object.entries(json)) {
      const field = index.get(norm(key));
      if (!field || value === null || value === undefined) continue;
      const converted = this.convertField(field, pkg, inner, value);
      if (converted !== undefined) out[field.name] = converted;
    }
    return out;
  }

  private convertField(field: FieldDescriptor, pkg: string, scope: MessageDescriptor[], value: Json): unknown {
    if (field.type === 'TYPE_MESSAGE') {
      const target = this.resolveMessage(field.typeName, pkg, scope);
      if (!target) return undefined;
      if (target.options?.mapEntry) return this.convertMap(target, pkg, scope, value);
      if (field.label === 'LABEL_REPEATED') {
        return Array.isArray(value) ? value.map((v) => this.convertMessage(target, pkg, scope, v)) : undefined;
      }
      return this.convertMessage(target, pkg, scope, value);
    }
    if (field.label === 'LABEL_REPEATED') {
      return Array.isArray(value) ? value.map((v) => this.convertScalar(field, pkg, scope, v)) : undefined;
    }
    return this.convertScalar(field, pkg, scope, value);
  }

  private convertMap(entry: MessageDescriptor, pkg: string, scope: MessageDescriptor[], value: Json): unknown {
    if (!isObject(value)) return undefined;
    const valueField = entry.field.find((f) => f.name === 'value');
    if (!valueField) return undefined;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v !== null) out[k] = this.convertField({ ...valueField, label: 'LABEL_OPTIONAL' }, pkg, scope, v);
    }
    return out;
  }

  private convertScalar(field: FieldDescriptor, pkg: string, scope: MessageDescriptor[], value: Json): unknown {
    if (field.type === 'TYPE_ENUM') {
      if (typeof value === 'string') return value;
      const en = this.resolveEnum(field.typeName, pkg, scope);
      return en?.value.find((v) => v.number === value)?.name ?? value;
    }
    if (INT64_TYPES.has(field.type)) return typeof value === 'number' || typeof value === 'string' ? String(value) : undefined;
    if (NUMBER_TYPES.has(field.type)) return Number(value);
    if (field.type === 'TYPE_BOOL') return value === true || value === 'true';
    if (field.type === 'TYPE_STRING') return typeof value === 'string' ? value : String(value);
    // Go's encoding/json writes []byte as base64.
    if (field.type === 'TYPE_BYTES') return typeof value === 'string' ? Buffer.from(value, 'base64') : undefined;
    return undefined;
  }

  private indexOf(desc: MessageDescriptor): Map<string, FieldDescriptor> {
    let index = this.fieldIndex.get(desc);
    if (!index) {
      index = new Map(desc.field.map((f) => [norm(f.name), f]));
      this.fieldIndex.set(desc, index);
    }
    return index;
  }

  private lookupMessage(fullName: string): MessageDescriptor | undefined {
    const entry = this.def[fullName] as { format?: string; type?: unknown } | undefined;
    return entry?.format === 'Protocol Buffer 3 DescriptorProto' ? (entry.type as MessageDescriptor) : undefined;
  }

  /** A type name as the descriptor gives it: relative to the innermost enclosing message, then the package. */
  private resolveMessage(typeName: string, pkg: string, scope: MessageDescriptor[]): MessageDescriptor | undefined {
    for (let i = scope.length - 1; i >= 0; i--) {
      const nested = scope[i].nestedType.find((n) => n.name === typeName);
      if (nested) return nested;
    }
    return this.lookupMessage(typeName.includes('.') ? typeName.replace(/^\./, '') : `${pkg}.${typeName}`) ??
      this.lookupMessage(typeName);
  }

  private resolveEnum(typeName: string, pkg: string, scope: MessageDescriptor[]): EnumDescriptor | undefined {
    for (let i = scope.length - 1; i >= 0; i--) {
      const nested = scope[i].enumType.find((n) => n.name === typeName);
      if (nested) return nested;
    }
    const full = typeName.includes('.') ? typeName.replace(/^\./, '') : `${pkg}.${typeName}`;
    const entry = this.def[full] as { format?: string; type?: unknown } | undefined;
    return entry?.format === 'Protocol Buffer 3 EnumDescriptorProto' ? (entry.type as EnumDescriptor) : undefined;
  }
}

function packageOf(fullName: string): string {
  const i = fullName.lastIndexOf('.');
  return i < 0 ? '' : fullName.slice(0, i);
}

function isObject(v: unknown): v is { [k: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

let converter: JsonToProto | undefined;

/** A CRI ContainerConfig from its JSON (as in containerd's verbose ContainerStatus info). */
export function containerConfigFromJson(json: unknown): ContainerConfig {
  converter ??= new JsonToProto();
  return converter.message('runtime.v1.ContainerConfig', json) as ContainerConfig;
}

/** A CRI PodSandboxConfig from its JSON (as in containerd's verbose PodSandboxStatus info). */
export function sandboxConfigFromJson(json: unknown): PodSandboxConfig {
  converter ??= new JsonToProto();
  return converter.message('runtime.v1.PodSandboxConfig', json) as PodSandboxConfig;
}
