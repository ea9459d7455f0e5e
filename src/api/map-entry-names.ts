// protobufjs (7.x, under proto-loader) describes a map field `images` with a nested entry type named `Images`,
// where protoc names it `ImagesEntry`. Strict descriptor readers (grpcurl >= 1.8.8, through Go's protodesc)
// refuse such a file ("invalid map: incorrect implicit map entry name"), so reflection would fail on any
// message with a map. This renames the entry types as protoc does before the descriptors are served.
import type * as protoLoader from '@grpc/proto-loader';
import descriptor from 'protobufjs/ext/descriptor/index.js';

/** The slice of a DescriptorProto this fix reads and writes. */
interface MessageDescriptor {
  name?: string;
  field?: { name?: string; typeName?: string; label?: number }[];
  nestedType?: MessageDescriptor[];
  options?: { mapEntry?: boolean } | null;
}

/** The name protoc gives the entry type of map field fieldName: `foo_bar` -> `FooBarEntry`. */
export function mapEntryName(fieldName: string): string {
  let out = '';
  let upperNext = true;
  for (const c of fieldName) {
    if (c === '_') upperNext = true;
    else if (upperNext) {
      out += c.toUpperCase();
      upperNext = false;
    } else out += c;
  }
  return out + 'Entry';
}

/** Renames, in message (full name fullName) and below, each map entry type and points its field at it. */
function fixMessage(message: MessageDescriptor, fullName: string): void {
  const nested = message.nestedType ?? [];
  for (const field of message.field ?? []) {
    if (!field.typeName || !field.name) continue;
    const short = field.typeName.startsWith('.') ? field.typeName.slice(field.typeName.lastIndexOf('.') + 1) : field.typeName;
    const entry = nested.find((n) => n.name === short && n.options?.mapEntry);
    if (!entry) continue;
    entry.name = mapEntryName(field.name);
    field.typeName = `.${fullName}.${entry.name}`;
  }
  for (const n of nested) if (!n.options?.mapEntry) fixMessage(n, `${fullName}.${n.name ?? ''}`);
}

/** One encoded FileDescriptorProto with protoc's map entry names. */
export function withMapEntryNames(encoded: Uint8Array): Uint8Array {
  const file = descriptor.FileDescriptorProto.decode(encoded) as unknown as { package?: string; messageType?: MessageDescriptor[] };
  const prefix = file.package ? `${file.package}.` : '';
  for (const m of file.messageType ?? []) fixMessage(m, `${prefix}${m.name ?? ''}`);
  return descriptor.FileDescriptorProto.encode(file as never).finish();
}

/** A copy of a package definition whose file descriptors use protoc's map entry names (the input is untouched). */
export function fixMapEntryNames(def: protoLoader.PackageDefinition): protoLoader.PackageDefinition {
  // Every type of a file carries the same descriptors: each distinct one is rewritten once.
  const done = new Map<Buffer, Buffer>();
  const fixed = (f: Buffer) => done.get(f) ?? done.set(f, Buffer.from(withMapEntryNames(f))).get(f)!;
  return Object.fromEntries(
    Object.entries(def).map(([name, obj]) => {
      const files = (obj as { fileDescriptorProtos?: Buffer[] }).fileDescriptorProtos;
      if (!Array.isArray(files)) return [name, obj];
      return [name, { ...obj, fileDescriptorProtos: files.map(fixed) }];
    }),
  );
}
