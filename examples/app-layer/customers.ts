import { DataTypes, Model, type Sequelize } from 'sequelize';
import type { VeilClient } from 'veil/client';
import { protectModel } from 'veil/client/sequelize';

/** A customer as the application sees it: cleartext. The table holds the protected forms. */
export class Customer extends Model {
  declare id: number;
  declare email: string;
  declare cardNumber: string | null;
  declare nationalId: string | null;
  declare name: string;
  declare plan: string;
}

/** The mapped attributes and their properties of class Customer in config/example.yaml. */
export const CUSTOMER_FIELDS = { email: 'email', cardNumber: 'cardNumber', nationalId: 'nationalId', name: 'name' } as const;

export function defineCustomer(sequelize: Sequelize, client: VeilClient, roles: { protect: string; unprotect: string }): typeof Customer {
  Customer.init(
    {
      id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
      // protected values are longer than the cleartext (AES-SIV, AES-GCM): TEXT, not VARCHAR(n)
      email: { type: DataTypes.TEXT, allowNull: false },
      cardNumber: { type: DataTypes.TEXT, field: 'card_number' },
      nationalId: { type: DataTypes.TEXT, field: 'national_id' },
      name: { type: DataTypes.TEXT, allowNull: false },
      plan: { type: DataTypes.TEXT, allowNull: false, defaultValue: 'free' },
    },
    { sequelize, tableName: 'customers', underscored: true },
  );
  protectModel(Customer, client, { class: 'Customer', fields: CUSTOMER_FIELDS, roles });
  return Customer;
}
