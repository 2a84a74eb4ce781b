/** What the admin key in use may do: a `read` key sees everything and is offered no write. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { operatorsIn, type OperatorStyle } from './operator-style.js';

export interface Whoami {
  actor: string;
  role: 'admin' | 'read';
  operator_style: OperatorStyle;
  /** The directory policies come from, where they are changed instead; null when the admin API writes them. */
  policy_files: string | null;
}

export const Access = createContext<Whoami>({ actor: 'anonymous', role: 'admin', operator_style: 'spec', policy_files: null });

/** Whether the screens should offer writes (create, save, delete, restore). */
export const useCanWrite = () => useContext(Access).role === 'admin';
/** Whether the screens should offer policy writes: not when policies come from files. */
export const useCanWritePolicies = () => useCanWrite() && useContext(Access).policy_files === null;
/** The directory policies come from, or null. */
export const usePolicyFiles = () => useContext(Access).policy_files;
/** How the server spells operators, and so how the editor offers them. */
export const useOperatorStyle = () => useContext(Access).operator_style;
/** The operator a new condition starts with: equality, as the server spells it. */
export const useFirstOperator = () => operatorsIn(useOperatorStyle())[0]!;
